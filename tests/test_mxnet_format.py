"""``nd.save`` / ``nd.load`` in Apache MXNet 1.x's binary NDArray format, and Gluon parameters.

The fixtures in ``tests/data/mxnet_format`` were written by MXNet 1.9.1 (see its README.md);
these tests need no MXNet installed.
"""

import json
import struct
from pathlib import Path

import mxrs as mx
import numpy as np
import pytest
from mxrs import gluon
from mxrs.base import MXNetError

DATA = Path(__file__).parent / "data" / "mxnet_format"
EXPECTED = json.loads((DATA / "expected.json").read_text())
FIXTURES = ["list", "dict", "np_scalar", "dense_net", "dense_net_full"]


def _check(arr, spec):
    assert arr.dtype == np.dtype(spec["dtype"])
    assert arr.shape == tuple(spec["shape"])
    want = np.array(spec["values"], dtype=spec["dtype"]).reshape(spec["shape"])
    np.testing.assert_array_equal(arr.asnumpy(), want)
    assert arr.asnumpy().dtype == want.dtype


def _net():
    net = gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(gluon.nn.Dense(4, in_units=3, activation="relu"))
        net.add(gluon.nn.Dense(2, in_units=4))
    return net


# ---------------------------------------------------------------------------------------------
# Files written by MXNet 1.9.1


def test_load_mxnet_list_file():
    loaded = mx.nd.load(DATA / "list.params")
    assert isinstance(loaded, list)
    assert len(loaded) == len(EXPECTED["list"])
    for arr, spec in zip(loaded, EXPECTED["list"], strict=True):
        _check(arr, spec)


def test_load_mxnet_dict_file_every_dtype():
    loaded = mx.nd.load(str(DATA / "dict.params"))
    assert isinstance(loaded, dict)
    assert list(loaded) == list(EXPECTED["dict"])  # file order kept
    for name, spec in EXPECTED["dict"].items():
        _check(loaded[name], spec)
    assert loaded["one"].shape == (1,)
    assert loaded["empty"].shape == (2, 0)


def test_load_mxnet_numpy_semantics_file_with_scalar():
    loaded = mx.nd.load(DATA / "np_scalar.params")
    assert isinstance(loaded, list)
    for arr, spec in zip(loaded, EXPECTED["np_scalar"], strict=True):
        _check(arr, spec)


def test_load_on_requested_context():
    loaded = mx.nd.load(DATA / "list.params", ctx=mx.cpu(1))
    assert all(a.context == mx.cpu(1) for a in loaded)


def test_parameter_names_as_mxnet_writes_them():
    spec = EXPECTED["dense_net"]
    assert sorted(mx.nd.load(DATA / "dense_net.params")) == spec["structural_names"]
    assert sorted(mx.nd.load(DATA / "dense_net_full.params")) == spec["full_names"]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_mxrs_rewrite_is_byte_identical_to_mxnet(fixture, tmp_path):
    src = DATA / f"{fixture}.params"
    out = tmp_path / "out.params"
    mx.nd.save(out, mx.nd.load(src))
    assert out.read_bytes() == src.read_bytes()


def test_save_parameters_is_byte_identical_to_mxnet(tmp_path):
    net = _net()
    net.load_parameters(str(DATA / "dense_net.params"))
    net.save_parameters(str(tmp_path / "a.params"))
    assert (tmp_path / "a.params").read_bytes() == (DATA / "dense_net.params").read_bytes()
    net.collect_params().save(str(tmp_path / "b.params"))
    assert (tmp_path / "b.params").read_bytes() == (DATA / "dense_net_full.params").read_bytes()


def test_sparse_file_raises_clear_error():
    with pytest.raises(MXNetError, match="sparse_csr.params.*csr storage.*not supported"):
        mx.nd.load(DATA / "sparse_csr.params")


# ---------------------------------------------------------------------------------------------
# Gluon


@pytest.mark.parametrize("fname", ["dense_net.params", "dense_net_full.params"])
def test_mxnet_trained_net_reproduces_mxnet_output(fname):
    spec = EXPECTED["dense_net"]
    net = _net()
    if fname == "dense_net.params":
        net.load_parameters(str(DATA / fname))
    else:
        net.collect_params().load(str(DATA / fname))
    out = net(mx.nd.array(spec["input"])).asnumpy()
    np.testing.assert_allclose(out, np.array(spec["output"], np.float32), rtol=1e-6, atol=1e-6)


def test_load_parameters_of_prefix_stripped_file(tmp_path):
    # A file without structural names (no '.') goes through ParameterDict.load with the block's
    # prefix restored, as in MXNet: it must hold the names without that prefix.
    spec = EXPECTED["dense_net"]
    src = _net()
    src.collect_params().load(str(DATA / "dense_net_full.params"))
    src.collect_params().save(str(tmp_path / "stripped.params"), strip_prefix="net_")
    net = _net()
    net.load_parameters(str(tmp_path / "stripped.params"))
    out = net(mx.nd.array(spec["input"])).asnumpy()
    np.testing.assert_allclose(out, np.array(spec["output"], np.float32), rtol=1e-6, atol=1e-6)
    with pytest.raises(MXNetError, match="'dense0_weight' is missing"):
        _net().load_parameters(str(DATA / "dense_net_full.params"))  # MXNet fails here too


def test_gluon_save_load_parameters_round_trip(tmp_path):
    net = _net()
    net.initialize(mx.init.Normal(1.0))
    x = mx.nd.array(np.random.RandomState(3).standard_normal((5, 3)))
    y = net(x).asnumpy()
    net.save_parameters(str(tmp_path / "net.params"))
    assert sorted(mx.nd.load(tmp_path / "net.params")) == [
        "0.bias",
        "0.weight",
        "1.bias",
        "1.weight",
    ]
    other = _net()
    other.load_parameters(str(tmp_path / "net.params"))
    np.testing.assert_array_equal(other(x).asnumpy(), y)

    net.collect_params().save(str(tmp_path / "full.params"), strip_prefix="net_")
    assert sorted(mx.nd.load(tmp_path / "full.params")) == [
        "dense0_bias",
        "dense0_weight",
        "dense1_bias",
        "dense1_weight",
    ]
    third = _net()
    third.collect_params().load(str(tmp_path / "full.params"), restore_prefix="net_")
    np.testing.assert_array_equal(third(x).asnumpy(), y)


# ---------------------------------------------------------------------------------------------
# Round trips and the layout written


DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool"]


@pytest.mark.parametrize("dtype", DTYPES + ["int16", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3, 1, 4), (3, 0)])
def test_round_trip_dtypes_and_shapes(dtype, shape, tmp_path):
    host = (np.arange(int(np.prod(shape))) % 7).reshape(shape).astype(dtype)
    mx.nd.save(tmp_path / "a.params", {"x": mx.nd.array(host, dtype=dtype)})
    back = mx.nd.load(tmp_path / "a.params")["x"]
    assert back.dtype == np.dtype(dtype)
    assert back.shape == shape
    np.testing.assert_array_equal(back.asnumpy(), host)


def test_round_trip_single_array_list_and_empty(tmp_path):
    f = tmp_path / "a.params"
    mx.nd.save(f, mx.nd.array([1.0, 2.0]))
    (only,) = mx.nd.load(f)
    np.testing.assert_array_equal(only.asnumpy(), [1.0, 2.0])
    mx.nd.save(f, (mx.nd.ones((2,)), mx.nd.zeros((1, 1), dtype="int64")))
    a, b = mx.nd.load(f)
    assert (a.shape, b.shape, b.dtype) == ((2,), (1, 1), np.int64)
    mx.nd.save(f, [])
    assert mx.nd.load(f) == []
    mx.nd.save(f, {"ünï": mx.nd.ones((1,))})
    assert list(mx.nd.load(f)) == ["ünï"]


def test_layout_written():
    # One float32 vector [1, 2] named "w": header, array (V2), names.
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "w.params"
        mx.nd.save(f, {"w": mx.nd.array([1.0, 2.0])})
        raw = f.read_bytes()
    want = (
        struct.pack("<QQQ", 0x112, 0, 1)
        + struct.pack("<IiIq", 0xF993FAC9, 0, 1, 2)
        + struct.pack("<iii", 1, 0, 0)
        + np.array([1.0, 2.0], "<f4").tobytes()
        + struct.pack("<Q", 1)
        + struct.pack("<Q", 1)
        + b"w"
    )
    assert raw == want


def test_scalar_switches_file_to_v3_magic(tmp_path):
    mx.nd.save(tmp_path / "a.params", [mx.nd.array(np.array(2.5)), mx.nd.ones((2,))])
    raw = (tmp_path / "a.params").read_bytes()
    assert struct.unpack_from("<I", raw, 24)[0] == 0xF993FACA


def test_save_rejects_bad_arguments(tmp_path):
    with pytest.raises(TypeError):
        mx.nd.save(tmp_path / "a.params", 3)
    with pytest.raises(TypeError):
        mx.nd.save(tmp_path / "a.params", [np.zeros(2)])
    with pytest.raises(TypeError):
        mx.nd.save(tmp_path / "a.params", {1: mx.nd.ones((1,))})


# ---------------------------------------------------------------------------------------------
# Older layouts


def _old_array(magic_v1: bool, host):
    if magic_v1:
        head = struct.pack(f"<II{host.ndim}q", 0xF993FAC8, host.ndim, *host.shape)
    else:  # oldest: no magic, u32 ndim and u32 dims
        head = struct.pack(f"<I{host.ndim}I", host.ndim, *host.shape)
    return head + struct.pack("<iii", 1, 0, 0) + host.astype("<f4").tobytes()


@pytest.mark.parametrize("magic_v1", [True, False])
def test_load_older_array_layouts(magic_v1, tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([7.0], dtype=np.float32)
    raw = struct.pack("<QQQ", 0x112, 0, 2) + _old_array(magic_v1, a) + _old_array(magic_v1, b)
    raw += struct.pack("<Q", 2) + struct.pack("<Q", 1) + b"a" + struct.pack("<Q", 1) + b"b"
    (tmp_path / "old.params").write_bytes(raw)
    loaded = mx.nd.load(tmp_path / "old.params")
    np.testing.assert_array_equal(loaded["a"].asnumpy(), a)
    np.testing.assert_array_equal(loaded["b"].asnumpy(), b)


def test_old_mxrs_npz_files_still_load(tmp_path):
    f = tmp_path / "old.params"
    with open(f, "wb") as fh:
        np.savez(fh, **{"d:w": np.ones((2, 2), np.float16), "d:b": np.arange(3)})
    d = mx.nd.load(f)
    assert d["w"].dtype == np.float16 and d["w"].shape == (2, 2)
    np.testing.assert_array_equal(d["b"].asnumpy(), np.arange(3))
    with open(f, "wb") as fh:
        np.savez(fh, **{"l:00000001": np.ones(1), "l:00000000": np.zeros(2)})
    first, second = mx.nd.load(f)
    assert (first.shape, second.shape) == ((2,), (1,))


# ---------------------------------------------------------------------------------------------
# Bad files


@pytest.mark.parametrize("fixture", ["list", "dict", "dense_net"])
def test_every_truncation_raises(fixture, tmp_path):
    raw = (DATA / f"{fixture}.params").read_bytes()
    f = tmp_path / "cut.params"
    for n in range(len(raw)):
        f.write_bytes(raw[:n])
        with pytest.raises(MXNetError, match="cut.params.*(truncated|magic)"):
            mx.nd.load(f)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "truncated"),
        (b"hello world, not an ndarray file", "unknown magic number"),
        (b"PK\x03\x04garbage", "corrupt .npz"),
        (struct.pack("<QQQ", 0x112, 0, 1 << 60), "claims"),
        (
            struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<IiI", 0xF993FAC9, 7, 0),
            "unknown storage type 7",
        ),
        (
            struct.pack("<QQQ", 0x112, 0, 1)
            + struct.pack("<IiIqiii", 0xF993FAC9, 0, 1, 2, 1, 0, 12)
            + b"\0\0",
            "truncated: data of .* bfloat16",
        ),
        (
            struct.pack("<QQQ", 0x112, 0, 1)
            + struct.pack("<IiIqiii", 0xF993FAC9, 0, 1, 1, 1, 0, 99)
            + struct.pack("<Q", 0),
            "type flag 99",
        ),
        (
            struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<IiI", 0xF993FAC9, 0, 0),
            "empty MXNet NDArray",
        ),
        (struct.pack("<QQQQ", 0x112, 0, 0, 3), "3 names for 0 arrays"),
        (struct.pack("<QQQQ", 0x112, 0, 0, 0) + b"x", "unexpected bytes"),
    ],
)
def test_garbage_raises_clear_error(content, message, tmp_path):
    f = tmp_path / "bad.params"
    f.write_bytes(content)
    with pytest.raises(MXNetError, match=f"bad.params.*{message}"):
        mx.nd.load(f)


def test_load_parameters_of_garbage_file_raises(tmp_path):
    f = tmp_path / "bad.params"
    f.write_bytes((DATA / "dense_net.params").read_bytes()[:-3])
    with pytest.raises(MXNetError, match="truncated"):
        _net().load_parameters(str(f))
