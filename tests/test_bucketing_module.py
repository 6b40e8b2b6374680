"""``mx.mod.BucketingModule``: an LSTM language model over buckets of sequence lengths.

Training must match Apache MXNet 1.9.1 weight for weight, lower the perplexity, keep one set of
parameter arrays for every bucket, train on a dist_sync store as one process with two contexts
does, and refuse bad input with errors that say what was wrong.
"""

import inspect
import logging

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from jobs import launch
from mxrs.base import MXNetError

V, B, HIDDEN = 7, 4, 5
KEYS = [6, 3, 6, 4, 3, 6, 4]  # the bucket of each batch, in order


def sym_gen(seq_len):
    """The language model of one bucket (run under mxrs and, as source, MXNet 1.9.1)."""
    data = mx.sym.Variable("data")
    label = mx.sym.Variable("softmax_label")
    embed = mx.sym.Embedding(data, input_dim=V, output_dim=4, name="embed")
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(HIDDEN, prefix="l0_"))
    stack.add(mx.rnn.GRUCell(HIDDEN, prefix="l1_"))
    out, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, HIDDEN)), num_hidden=V,
                                 name="pred")  # fmt: skip
    label = mx.sym.Reshape(label, shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)


class Batches(mx.io.DataIter):
    """Fixed batches ``(bucket key, tokens, next tokens)``, the given rows of each."""

    def __init__(self, steps, rows):
        super().__init__(rows.stop - rows.start)
        self.steps, self.rows, self.i = steps, rows, 0
        shape = (self.batch_size, max(k for k, _, _ in steps))
        self.provide_data = [mx.io.DataDesc("data", shape)]
        self.provide_label = [mx.io.DataDesc("softmax_label", shape)]

    def reset(self):
        self.i = 0

    def next(self):
        if self.i == len(self.steps):
            raise StopIteration
        key, x, y = self.steps[self.i]
        self.i += 1
        x, y = x[self.rows], y[self.rows]
        return mx.io.DataBatch(
            [mx.nd.array(x)],
            [mx.nd.array(y)],
            pad=0,
            bucket_key=key,
            provide_data=[mx.io.DataDesc("data", x.shape)],
            provide_label=[mx.io.DataDesc("softmax_label", y.shape)],
        )


def _steps(rows=B, seed=5):
    """Each batch: its bucket key, tokens and next tokens (a learnable pattern, some noise;
    -1 after the last)."""
    rng = np.random.default_rng(seed)
    steps = []
    for key in KEYS:
        start = rng.integers(0, V, size=(rows, 1))
        x = (start + np.arange(key)) % V
        noise = rng.random(x.shape) < 0.1
        x = np.where(noise, rng.integers(0, V, size=x.shape), x).astype(np.float32)
        y = ((x + 1) % V).astype(np.float32)
        y[:, -1] = -1  # no next token: padding, as BucketSentenceIter's (no gradient)
        steps.append((key, x, y))
    return steps


def _init_params():
    rng = np.random.default_rng(9)
    net, _, _ = sym_gen(max(KEYS))
    shapes, _, _ = net.infer_shape(data=(B, max(KEYS)), softmax_label=(B, max(KEYS)))
    return {n: rng.uniform(-0.5, 0.5, s).astype(np.float32)
            for n, s in zip(net.list_arguments(), shapes, strict=True)
            if n not in ("data", "softmax_label")}  # fmt: skip


OPT = {"learning_rate": 0.3, "momentum": 0.9, "wd": 0.001}

FIT = """
steps = [(int(k), inputs["x%d" % i], inputs["y%d" % i]) for i, k in enumerate(inputs["keys"])]
init = {k[2:]: mx.nd.array(v) for k, v in inputs.items() if k.startswith("p_")}
mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=max(k for k, _, _ in steps))
metric = mx.metric.Perplexity(-1)
mod.fit(Batches(steps, slice(0, len(steps[0][1]))), num_epoch=3, eval_metric=metric,
        optimizer="sgd", optimizer_params=OPT, arg_params=init)
arrays = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
result = [int(k) for k in sorted(mod._buckets)]
"""


def _fit_inputs():
    steps = _steps()
    inputs = {"keys": np.array([k for k, _, _ in steps])}
    for i, (_, x, y) in enumerate(steps):
        inputs[f"x{i}"], inputs[f"y{i}"] = x, y
    inputs.update({f"p_{k}": v for k, v in _init_params().items()})
    return inputs


def test_bucketing_training_matches_mxnet(tmp_path):
    inputs = _fit_inputs()
    model = inspect.getsource(sym_gen) + "\n" + inspect.getsource(Batches)
    script = f"import mxnet as mx\nV, HIDDEN, OPT = {V}, {HIDDEN}, {OPT!r}\n{model}\n{FIT}"
    want_keys, want = mxnet_ref.run(tmp_path, script, **inputs)
    scope = {"mx": mx, "np": np, "inputs": inputs, "OPT": OPT, "sym_gen": sym_gen,
             "Batches": Batches}  # fmt: skip
    exec(FIT, scope)
    got = scope["arrays"]
    assert scope["result"] == want_keys == [3, 4, 6]
    assert sorted(got) == sorted(want)
    for k in sorted(got):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=2e-5, err_msg=k)
        assert np.abs(got[k] - inputs["p_" + k]).max() > 1e-3, k  # it trained


def _trained(num_epoch=12):
    mx.random.seed(3)
    steps = _steps(rows=8)
    it = Batches(steps, slice(0, 8))
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=6)
    history = []

    def record(epoch, sym, arg, aux):
        history.append(mod.score(it, mx.metric.Perplexity(-1))[0][1])

    mod.fit(it, num_epoch=num_epoch, eval_metric=mx.metric.Perplexity(-1),
            optimizer="adam", optimizer_params={"learning_rate": 0.05},
            initializer=mx.init.Xavier(), epoch_end_callback=record)  # fmt: skip
    return mod, history


def test_perplexity_falls_and_buckets_share_one_set_of_parameters():
    mod, history = _trained()
    assert history[-1] < 0.5 * history[0] and history[-1] < 3.0, history
    assert sorted(mod._buckets) == [3, 4, 6]
    default = mod._buckets[6]._exec_group
    for key in (3, 4):
        group = mod._buckets[key]._exec_group
        for name, arrays in zip(group.param_names, group.param_arrays, strict=True):
            i = default.param_names.index(name)
            assert arrays[0] is default.param_arrays[i][0], (key, name)
            assert group.grad_arrays[group.param_names.index(name)][0] is default.grad_arrays[i][0]
        assert mod._buckets[key]._arg_params is mod._buckets[6]._arg_params
        assert mod._buckets[key]._optimizer is mod._buckets[6]._optimizer
    # whichever bucket is current, the parameters are the same
    before = {k: v.asnumpy().copy() for k, v in mod.get_params()[0].items()}
    x = mx.nd.zeros((8, 3))
    mod.forward(
        mx.io.DataBatch(
            [x],
            [x],
            bucket_key=3,
            provide_data=[("data", (8, 3))],
            provide_label=[("softmax_label", (8, 3))],
        ),
        is_train=False,
    )
    assert mod.curr_bucket_key == 3 and mod.get_outputs()[0].shape == (24, V)
    after = mod.get_params()[0]
    for k in before:
        np.testing.assert_array_equal(after[k].asnumpy(), before[k])


def test_checkpoint_round_trip(tmp_path):
    mod, _ = _trained(num_epoch=1)
    prefix = str(tmp_path / "lm")
    mod.save_checkpoint(prefix, 1)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["lm-0001.params", "lm-3-symbol.json", "lm-4-symbol.json",
                     "lm-6-symbol.json", "lm.buckets"]  # fmt: skip
    loaded = mx.mod.BucketingModule.load(prefix, 1, sym_gen=sym_gen, default_bucket_key=6)
    loaded.bind([("data", (8, 6))], [("softmax_label", (8, 6))], for_training=False)
    want = mod.get_params()[0]
    got = loaded.get_params()[0]
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_array_equal(got[k].asnumpy(), want[k].asnumpy(), err_msg=k)
    batch = Batches(_steps(rows=8), slice(0, 8)).next()
    assert batch.bucket_key == 6
    batch = Batches(_steps(rows=8)[1:], slice(0, 8)).next()
    assert batch.bucket_key == 3
    mod.forward(batch, is_train=False)
    loaded.forward(batch, is_train=False)
    np.testing.assert_allclose(loaded.get_outputs()[0].asnumpy(),
                               mod.get_outputs()[0].asnumpy(), rtol=1e-6)  # fmt: skip


LOAD = """
mod = mx.mod.BucketingModule.load("lm", 1, sym_gen=sym_gen, default_bucket_key=6)
mod.bind([("data", (8, 6))], [("softmax_label", (8, 6))], for_training=False)
result = [int(k) for k in sorted(mod._buckets)]
for i, (key, x, y) in enumerate(steps):
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], bucket_key=key,
                                provide_data=[("data", x.shape)],
                                provide_label=[("softmax_label", y.shape)]), is_train=False)
    arrays["out%d" % i] = mod.get_outputs()[0].asnumpy()
"""


def test_mxnet_loads_an_mxrs_bucketing_checkpoint(tmp_path):
    mod, _ = _trained(num_epoch=1)
    mod.save_checkpoint(str(tmp_path / "lm"), 1)
    steps = _steps(rows=8)[:3]
    inputs = {}
    for i, (_, x, y) in enumerate(steps):
        inputs[f"x{i}"], inputs[f"y{i}"] = x, y
    model = inspect.getsource(sym_gen)
    script = (
        f"import mxnet as mx\nV, HIDDEN = {V}, {HIDDEN}\n{model}\n"
        f"keys = {[k for k, _, _ in steps]}\n"
        "steps = [(k, inputs['x%d' % i], inputs['y%d' % i]) for i, k in enumerate(keys)]\n" + LOAD
    )
    keys, want = mxnet_ref.run(tmp_path, script, **inputs)
    assert keys == [3, 4, 6]
    for i, batch in enumerate(Batches(steps, slice(0, 8))):
        mod.forward(batch, is_train=False)
        got = mod.get_outputs()[0].asnumpy()
        np.testing.assert_allclose(got, want[f"out{i}"], rtol=1e-5, atol=1e-6)


def test_bad_input_errors_name_what_is_wrong():
    with pytest.raises(MXNetError, match="sym_gen must be a function"):
        mx.mod.BucketingModule(None, default_bucket_key=3)
    with pytest.raises(MXNetError, match="default_bucket_key is required"):
        mx.mod.BucketingModule(sym_gen)

    def only_small(key):
        if key > 6:
            raise KeyError(f"no bucket {key}")
        return sym_gen(key)

    mod = mx.mod.BucketingModule(only_small, default_bucket_key=6)
    with pytest.raises(MXNetError, match="not bound"):
        mod.switch_bucket(3, [("data", (2, 3))])
    mod.bind([("data", (2, 6))], [("softmax_label", (2, 6))])
    mod.init_params()
    with pytest.raises(MXNetError, match="no optimizer"):
        mod.update()

    def batch(key, length):
        x = mx.nd.zeros((2, length))
        return mx.io.DataBatch([x], [x], bucket_key=key, provide_data=[("data", (2, length))],
                               provide_label=[("softmax_label", (2, length))])  # fmt: skip

    with pytest.raises(MXNetError, match="sym_gen failed for bucket key 9: KeyError"):
        mod.forward(batch(9, 9))
    with pytest.raises(MXNetError, match="cannot bind bucket 3 for data shapes"):
        mod.forward(batch(3, 5))  # data of length 5 for the bucket of length 3
    with pytest.raises(MXNetError, match="no bucket_key"):
        mod.forward(batch(None, 4))
    mod.forward(batch(4, 4))  # the failures left the module usable
    assert mod.get_outputs()[0].shape == (8, V)
    with pytest.raises(MXNetError, match="shared_module is not supported"):
        mod.bind([("data", (2, 6))], force_rebind=True, shared_module=mod)
    with pytest.raises(MXNetError, match="'nodata' is not found"):
        mx.mod.BucketingModule(lambda k: (sym_gen(k)[0], ["nodata"], None), 6)
    with pytest.raises(MXNetError, match=r"must return \(symbol, data_names, label_names\)"):
        mx.mod.BucketingModule(lambda k: sym_gen(k)[0], 6)


def test_a_bucket_with_a_new_parameter_is_refused():
    def gen(key):
        data = mx.sym.Variable("data")
        net = mx.sym.FullyConnected(data, num_hidden=2, name="fc" if key == 4 else f"fc{key}")
        return net, ("data",), None

    mod = mx.mod.BucketingModule(gen, default_bucket_key=4)
    mod.bind([("data", (2, 4))], None)
    mod.init_params()
    x = mx.nd.ones((2, 3))
    with pytest.raises(MXNetError, match="'fc3_weight' is not a parameter of the shared module"):
        mod.forward(mx.io.DataBatch([x], bucket_key=3, provide_data=[("data", (2, 3))]))


# ----------------------------------------------------------------- dist store
ROWS = 4

WORKER = f"""
import sys
import numpy as np
import mxrs as mx
sys.path.insert(0, {str(__import__("os").path.dirname(__file__))!r})
from test_bucketing_module import Batches, sym_gen, _steps, _init_params, OPT, ROWS

kv = mx.kv.create(sys.argv[1])
r = kv.rank
it = Batches(_steps(rows=2 * ROWS), slice(r * ROWS, (r + 1) * ROWS))
mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=6)
init = {{k: mx.nd.array(v) for k, v in _init_params().items()}}
mod.fit(it, num_epoch=2, kvstore=kv, optimizer="sgd", optimizer_params=OPT, arg_params=init,
        eval_metric=mx.metric.Perplexity(-1))
np.savez(f"w{{r}}.npz", **{{k: v.asnumpy() for k, v in mod.get_params()[0].items()}})
print("buckets", sorted(mod._buckets))
"""


def test_dist_sync_bucketing_equals_two_contexts_in_one_process(tmp_path):
    proc = launch(tmp_path, WORKER, args=["dist_sync"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("buckets [3, 4, 6]") == 2
    w0, w1 = (dict(np.load(tmp_path / f"w{r}.npz")) for r in range(2))
    it = Batches(_steps(rows=2 * ROWS), slice(0, 2 * ROWS))
    mod = mx.mod.BucketingModule(
        sym_gen, default_bucket_key=6, context=[mx.cpu(0), mx.cpu(1)], logger=logging.getLogger("x")
    )
    init = _init_params()
    mod.fit(it, num_epoch=2, kvstore="device", optimizer="sgd", optimizer_params=OPT,
            arg_params={k: mx.nd.array(v) for k, v in init.items()},
            eval_metric=mx.metric.Perplexity(-1))  # fmt: skip
    ref = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    assert sorted(ref) == sorted(w0) == sorted(init)
    for k in ref:
        np.testing.assert_allclose(w0[k], w1[k], rtol=1e-6, atol=1e-7, err_msg=k)
        np.testing.assert_allclose(w0[k], ref[k], rtol=1e-4, atol=1e-5, err_msg=k)
        assert np.abs(w0[k] - init[k]).max() > 1e-3, k


def test_module_bind_with_a_shared_module():
    data = mx.sym.Variable("data")
    net = mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="bn")
    a = mx.mod.Module(net, label_names=None)
    with pytest.raises(MXNetError, match="must be a Module that is bound"):
        mx.mod.Module(net, label_names=None).bind([("data", (2, 5))], shared_module=a)
    a.bind([("data", (4, 5))])
    a.init_params(mx.init.Xavier())
    b = mx.mod.Module(net, label_names=None)
    b.bind([("data", (2, 5))], shared_module=a)
    assert b.params_initialized and not b.optimizer_initialized
    ga, gb = a._exec_group, b._exec_group
    for name in ("fc_weight", "fc_bias", "bn_gamma"):
        i = ga.param_names.index(name)
        assert gb.param_arrays[i][0] is ga.param_arrays[i][0]
        assert gb.grad_arrays[i][0] is ga.grad_arrays[i][0]
    assert gb.aux_arrays[0][0] is ga.aux_arrays[0][0]  # moving statistics too
    a.reshape([("data", (6, 5))])  # a rebind keeps the arrays, so b stays in step
    assert a._exec_group.param_arrays[0][0] is gb.param_arrays[0][0]
    a.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    c = mx.mod.Module(net, label_names=None)
    c.bind([("data", (3, 5))], shared_module=a)
    assert c.optimizer_initialized and c._updater is a._updater
    rng = np.random.default_rng(0)
    c.forward(mx.io.DataBatch([mx.nd.array(rng.standard_normal((3, 5)))]), is_train=True)
    c.backward([mx.nd.array(rng.standard_normal((3, 3)))])
    before = a.get_params()[0]["fc_weight"].asnumpy().copy()
    c.update()
    a._params_dirty = True
    assert np.abs(a.get_params()[0]["fc_weight"].asnumpy() - before).max() > 1e-4
