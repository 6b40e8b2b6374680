"""Checkpoints against Apache MXNet 1.9.1: files written by ``mx.model.save_checkpoint`` load in
mxrs with equal values and the same symbol, files of mxrs load in MXNet, both write the same
bytes and log the same line; missing or malformed files are errors that name them."""

import json
import logging
import textwrap

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import checkpoint
from mxrs.base import MXNetError

# Symbol code run unchanged by both libraries (``mx`` is either).
NET = textwrap.dedent(
    """
    def net(mx):
        data = mx.sym.Variable("data")
        fc1 = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
        bn = mx.sym.BatchNorm(fc1, fix_gamma=False, name="bn1")
        act = mx.sym.Activation(bn, act_type="relu", name="relu1")
        fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
        return mx.sym.SoftmaxOutput(fc2, name="softmax")
    """
)

SHAPES = {
    "arg:fc1_weight": ((4, 5), np.float32),
    "arg:fc1_bias": ((4,), np.float32),
    "arg:bn1_gamma": ((4,), np.float32),
    "arg:bn1_beta": ((4,), np.float32),
    "arg:fc2_weight": ((3, 4), np.float32),
    "arg:fc2_bias": ((3,), np.float32),
    "arg:extra_half": ((2, 2), np.float16),
    "aux:bn1_moving_mean": ((4,), np.float32),
    "aux:bn1_moving_var": ((4,), np.float32),
    "aux:steps": ((3,), np.int32),
}


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {k: (rng.standard_normal(s) * 10).astype(t) for k, (s, t) in SHAPES.items()}


def _split(params):
    """``(arg, aux)`` dicts of mxrs NDArrays from ``{'arg:NAME': array, ...}``."""
    arg = {k[4:]: mx.nd.array(v, dtype=v.dtype) for k, v in params.items() if k[:4] == "arg:"}
    aux = {k[4:]: mx.nd.array(v, dtype=v.dtype) for k, v in params.items() if k[:4] == "aux:"}
    return arg, aux


# Captures MXNet's log lines in ``result["log"]``; inputs are named "arg:..." / "aux:...".
_MXNET_LOG = """
import logging
messages = []
class _Keep(logging.Handler):
    def emit(self, record):
        messages.append((record.levelname, record.getMessage()))
logging.getLogger().addHandler(_Keep())
logging.getLogger().setLevel(logging.INFO)
import mxnet as mx
"""


def _info(caplog):
    return [(r.levelname, r.getMessage()) for r in caplog.records]


def test_mxnet_checkpoints_load_in_mxrs(tmp_path, caplog):
    prefix = str(tmp_path / "mxnet-net")
    params = _params()
    script = (
        _MXNET_LOG
        + NET
        + f"""
sym = net(mx)
arg = {{k[4:]: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items() if k[:4] == "arg:"}}
aux = {{k[4:]: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items() if k[:4] == "aux:"}}
mx.model.save_checkpoint({prefix!r}, 7, sym, arg, aux)
result = {{"log": messages, "json": sym.tojson()}}
"""
    )
    result, _ = mxnet_ref.run(tmp_path, script, **params)
    mxnet_json = (tmp_path / "mxnet-net-symbol.json").read_text()
    mxnet_bytes = (tmp_path / "mxnet-net-0007.params").read_bytes()

    sym, arg, aux = checkpoint.load_checkpoint(prefix, 7)
    assert json.loads(sym.tojson()) == json.loads(mxnet_json) == json.loads(result["json"])
    assert sym.list_arguments() == ["data", *[k[4:] for k in list(SHAPES)[:6]], "softmax_label"]
    assert sym.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    loaded = {**{f"arg:{k}": v for k, v in arg.items()}, **{f"aux:{k}": v for k, v in aux.items()}}
    assert sorted(loaded) == sorted(params)
    for key, want in params.items():
        got = loaded[key].asnumpy()
        assert got.dtype == want.dtype and got.shape == want.shape, key
        np.testing.assert_array_equal(got, want, err_msg=key)

    # writing the same checkpoint again gives MXNet's bytes, JSON text and log line
    with caplog.at_level(logging.INFO):
        checkpoint.save_checkpoint(prefix, 7, sym, arg, aux)
    assert (tmp_path / "mxnet-net-0007.params").read_bytes() == mxnet_bytes
    assert json.loads((tmp_path / "mxnet-net-symbol.json").read_text()) == json.loads(mxnet_json)
    assert _info(caplog) == [tuple(m) for m in result["log"]]
    assert result["log"] == [["INFO", f'Saved checkpoint to "{prefix}-0007.params"']]


def test_mxrs_checkpoints_load_in_mxnet(tmp_path, caplog):
    prefix = str(tmp_path / "mxrs-net")
    params = _params(1)
    namespace = {}
    exec(NET, namespace)
    sym = namespace["net"](mx)
    arg, aux = _split(params)
    with caplog.at_level(logging.INFO):
        checkpoint.save_checkpoint(prefix, 12, sym, arg, aux)
    assert _info(caplog) == [("INFO", f'Saved checkpoint to "{prefix}-0012.params"')]
    script = (
        _MXNET_LOG
        + f"""
sym, arg, aux = mx.model.load_checkpoint({prefix!r}, 12)
for k, v in arg.items():
    arrays["arg:" + k] = v.asnumpy()
for k, v in aux.items():
    arrays["aux:" + k] = v.asnumpy()
result = {{"json": sym.tojson(), "args": sym.list_arguments()}}
"""
    )
    result, arrays = mxnet_ref.run(tmp_path, script)
    assert json.loads(result["json"]) == json.loads(sym.tojson())
    assert result["args"] == sym.list_arguments()
    assert sorted(arrays) == sorted(params)
    for key, want in params.items():
        assert arrays[key].dtype == want.dtype, key
        np.testing.assert_array_equal(arrays[key], want, err_msg=key)


def test_without_a_symbol_only_the_parameters_are_written(tmp_path):
    prefix = str(tmp_path / "p")
    arg, aux = _split(_params(2))
    checkpoint.save_checkpoint(prefix, 0, None, arg, aux)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-0000.params"]
    got_arg, got_aux = checkpoint.load_params(prefix, 0)
    assert sorted(got_arg) == sorted(arg) and sorted(got_aux) == sorted(aux)
    np.testing.assert_array_equal(got_aux["steps"].asnumpy(), aux["steps"].asnumpy())
    # None counts as no parameters; NumPy arrays are taken as they are
    checkpoint.save_checkpoint(prefix, 1, None, {"w": np.arange(3.0)}, None)
    got_arg, got_aux = checkpoint.load_params(prefix, 1)
    assert got_aux == {} and list(got_arg) == ["w"]
    np.testing.assert_array_equal(got_arg["w"].asnumpy(), np.arange(3.0))


def test_keys_of_other_kinds_are_skipped_and_an_empty_file_warns(tmp_path, caplog):
    prefix = str(tmp_path / "q")
    mx.nd.save(f"{prefix}-0003.params", {"arg:w": mx.nd.ones((2,)), "opt:m": mx.nd.zeros((2,))})
    arg, aux = checkpoint.load_params(prefix, 3)
    assert list(arg) == ["w"] and aux == {}
    mx.nd.save(f"{prefix}-0004.params", {})
    with caplog.at_level(logging.WARNING):
        assert checkpoint.load_params(prefix, 4) == ({}, {})
    assert _info(caplog) == [("WARNING", f"Params file '{prefix}-0004.params' is empty")]


def test_missing_and_malformed_files_are_errors_that_name_them(tmp_path):
    prefix = str(tmp_path / "r")
    with pytest.raises(MXNetError, match=f"{prefix}-0005.params"):
        checkpoint.load_params(prefix, 5)
    with pytest.raises(MXNetError, match=f"{prefix}-symbol.json"):
        checkpoint.load_checkpoint(prefix, 5)
    mx.nd.save(f"{prefix}-0005.params", {"arg:w": mx.nd.ones((2,))})
    with pytest.raises(MXNetError, match=f"{prefix}-symbol.json"):
        checkpoint.load_checkpoint(prefix, 5)
    mx.nd.save(f"{prefix}-0006.params", [mx.nd.ones((2,))])
    with pytest.raises(MXNetError, match="list of arrays"):
        checkpoint.load_params(prefix, 6)
    mx.nd.save(f"{prefix}-0007.params", {"weight": mx.nd.ones((2,))})
    with pytest.raises(MXNetError, match="'weight'.*'arg:NAME'"):
        checkpoint.load_params(prefix, 7)
    (tmp_path / "r-0008.params").write_bytes(b"not an ndarray file")
    with pytest.raises(MXNetError, match="r-0008.params"):
        checkpoint.load_params(prefix, 8)
    with pytest.raises(MXNetError, match="symbol must be an mx.sym.Symbol"):
        checkpoint.save_checkpoint(prefix, 9, "not a symbol", {}, {})
