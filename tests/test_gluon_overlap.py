"""Overlapping communication with backward: the same weights with overlap on and off.

Each job is 2 workers and 2 servers training one model for a few steps, worker 0 on two contexts
and worker 1 on one; the model has a Parameter with ``grad_req='add'``, a branch used only on
even steps (``ignore_stale_grad``), and a last batch of another size. The workers count the
push-and-pulls made while backward runs, to show that overlap sends gradients early (and that
without it nothing is sent before ``step``).
"""

import json

import mxrs as mx
import numpy as np
import pytest
from jobs import launch
from mxrs import autograd, gluon
from mxrs.base import MXNetError
from mxrs.gluon import _overlap

STEPS, BATCH, LAST = 5, 8, 5

WORKER = f"""
import sys, json
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon, nd

opt_name, update_on_kv, overlap = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
kv = mx.kv.create("dist_sync")
r = kv.rank
ctx = [mx.cpu(0), mx.cpu(1)] if r == 0 else [mx.cpu(0)]


class Net(gluon.Block):
    def __init__(self):
        super().__init__(prefix="net_")
        with self.name_scope():
            self.body = gluon.nn.HybridSequential()
            self.body.add(gluon.nn.Dense(8, activation="relu", in_units=5),
                          gluon.nn.Dense(3, in_units=8))
            self.branch = gluon.nn.Dense(3, in_units=5)
            self.extra = self.params.get("extra", shape=(3,), grad_req="add", init="zeros")

    def forward(self, x, use_branch):
        out = self.body(x) + self.extra.data(x.context)
        return out + self.branch(x) if use_branch else out


mx.random.seed(7)
net = Net()
net.initialize(mx.init.Xavier(), ctx=ctx)
if opt_name == "adam":
    params = {{"learning_rate": 0.01}}
else:
    params = {{"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}}
if opt_name == "sgd-scheduled":  # the servers' lr changes every other step
    opt_name = "sgd"
    params["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
trainer = gluon.Trainer(net.collect_params(), opt_name, params, kvstore=kv,
                        update_on_kvstore=update_on_kv, overlap=overlap)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

early = []
in_backward = False
sends = 0


def counting(real):
    def pushpull(*args, **kwargs):
        global sends
        sends += in_backward
        return real(*args, **kwargs)
    return pushpull


rng = np.random.RandomState(10 + r)
for step in range({STEPS}):
    n = {LAST} if step == {STEPS} - 1 else {BATCH}
    x = nd.array(rng.normal(size=(n, 5)))
    y = nd.array(rng.randint(0, 3, size=n))
    xs = gluon.utils.split_and_load(x, ctx, even_split=False)
    ys = gluon.utils.split_and_load(y, ctx, even_split=False)
    with autograd.record():
        losses = [loss_fn(net(a, step % 2 == 0), b) for a, b in zip(xs, ys)]
    if trainer._kvstore is not None and not isinstance(trainer._kvstore.pushpull, type(counting)):
        trainer._kvstore.pushpull = counting(trainer._kvstore.pushpull)
    sends = 0
    in_backward = True
    autograd.backward(losses)
    in_backward = False
    early.append(sends)
    trainer.step(n, ignore_stale_grad=True)
    net.extra.zero_grad()
mx.nd.waitall()
np.savez(f"final{{r}}.npz", **{{k: v.data(ctx[0]).asnumpy()
                              for k, v in net.collect_params().items()}})
with open(f"early{{r}}.json", "w") as f:
    json.dump(early, f)
"""


def _train(tmp_path, opt_name, update_on_kv, overlap, bucket):
    run = tmp_path / f"{opt_name}-{update_on_kv}-{overlap}"
    run.mkdir()
    result = launch(
        run,
        WORKER,
        env=[f"MXRS_BUCKET_BYTES={bucket}"],
        args=[opt_name, str(int(update_on_kv)), str(int(overlap))],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    weights = [dict(np.load(run / f"final{r}.npz")) for r in range(2)]
    early = [json.loads((run / f"early{r}.json").read_text()) for r in range(2)]
    return weights, early, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("opt_name", "update_on_kv", "bucket"),
    [
        ("sgd", False, 0),
        ("sgd", True, 0),
        ("adam", False, 300),
        ("adam", True, 300),
        ("sgd-scheduled", True, 0),
    ],
)
def test_overlap_on_and_off_give_the_same_weights(tmp_path, opt_name, update_on_kv, bucket):
    on, early_on, log_on = _train(tmp_path, opt_name, update_on_kv, True, bucket)
    off, early_off, log_off = _train(tmp_path, opt_name, update_on_kv, False, bucket)
    for r in range(2):
        assert on[r].keys() == off[r].keys()
        for name in on[r]:
            np.testing.assert_allclose(
                on[r][name], off[r][name], rtol=1e-6, atol=1e-7, err_msg=name
            )
    assert not np.allclose(on[0]["net_extra"], 0)  # the 'add' Parameter was trained too
    # the first step sets the store up and sends at step; from then on backward sends early
    for r in range(2):
        assert early_off[r] == [0] * STEPS
        assert early_on[r][0] == 0 and all(n > 0 for n in early_on[r][1:]), early_on
    if bucket == 0:
        # one send per Parameter that backward finished and that backward overwrites: the 4 of
        # the body always, the branch's 2 on even steps ('extra' accumulates, so waits for step)
        assert early_on[0][1:] == [4, 6, 4, 6]
    # with update_on_kvstore the servers keep the first step's gradient scale, as MXNet does
    if update_on_kv:
        for log in (log_on, log_off):
            assert log.count("Possible change in the `batch_size`") == 2  # both workers, once
    else:
        assert "batch_size" not in log_on + log_off


class _Owner:
    """Stands in for a Trainer: records what the stream sends."""

    def __init__(self):
        self.sent = []


def _armed(bucket_bytes, n_params=3, contexts=None):
    contexts = contexts or (mx.cpu(0),)
    owner = _Owner()
    stream = _overlap.GradientStream(owner, owner.sent.append, bucket_bytes)
    params = []
    for i in range(n_params):
        p = gluon.Parameter(f"w{i}", shape=(4,))
        p.initialize(mx.init.One(), ctx=list(contexts))
        p._set_trainer(owner)
        params.append(p)
    stream.arm(list(enumerate(params)), len(contexts))
    return owner, stream, params


def _backward(params, ctx):
    # loss = sum(w2 * (w1 * (w0 * x))): backward finishes w2 first, then w1, then w0
    x = mx.nd.ones((4,), ctx=ctx)
    with autograd.record():
        h = x
        for p in params:
            h = p.data(ctx) * h
        loss = h.sum()
    loss.backward()


def test_parameters_are_sent_as_backward_finishes_them_in_buckets():
    owner, stream, params = _armed(bucket_bytes=32)  # two 16-byte gradients per bucket
    _backward(params, mx.cpu(0))
    assert owner.sent == [[2, 1]]  # the last layer first; w0 waits in a bucket of its own
    stream.flush()
    assert owner.sent == [[2, 1], [0]] and stream.sent() == {0, 1, 2}
    stream.next_step()
    assert stream.sent() == set()


def test_a_parameter_is_sent_once_every_context_has_its_gradient():
    ctxs = (mx.cpu(0), mx.cpu(1))
    owner, stream, params = _armed(bucket_bytes=0, contexts=ctxs)
    _backward(params, ctxs[0])
    assert owner.sent == []
    _backward(params, ctxs[1])
    assert owner.sent == [[2], [1], [0]]


def test_a_gradient_written_again_after_it_was_sent_is_an_error():
    owner, stream, params = _armed(bucket_bytes=0)
    _backward(params, mx.cpu(0))
    with pytest.raises(MXNetError, match="Parameter 'w2' again after it was sent.*overlap=False"):
        _backward(params, mx.cpu(0))


def test_a_sent_gradient_refuses_in_place_writes_until_the_next_step():
    owner, stream, params = _armed(bucket_bytes=32)
    _backward(params, mx.cpu(0))
    assert owner.sent == [[2, 1]]
    grads = [p.grad() for p in params]
    before = grads[2].asnumpy().copy()
    with pytest.raises(MXNetError, match="Parameter 'w1' was already sent.*MXRS_OVERLAP=0"):
        gluon.utils.clip_global_norm(grads, 1e-3)  # what clipping does: grad *= scale
    np.testing.assert_array_equal(grads[0].asnumpy(), before)  # all or nothing
    for write in (lambda g: g.__setitem__(slice(None), 0), lambda g: mx.nd.ones((4,)).copyto(g)):
        with pytest.raises(MXNetError, match="Parameter 'w1' was already sent"):
            write(grads[1])
    np.testing.assert_array_equal(grads[2].asnumpy(), before)  # nothing was written
    grads[0][:] = 0  # not sent yet: a write is fine
    stream.flush()
    stream.next_step()
    grads[2] *= 0.5  # the step is over: writes are the program's again
    np.testing.assert_array_equal(grads[2].asnumpy(), before * 0.5)


def test_a_disarmed_stream_or_another_trainers_parameter_sends_nothing():
    owner, stream, params = _armed(bucket_bytes=0)
    params[0]._set_trainer(_Owner())
    _backward(params, mx.cpu(0))
    assert owner.sent == [[2], [1]]
    stream.next_step()
    stream.disarm()
    _backward(params, mx.cpu(0))
    assert owner.sent == [[2], [1]]
    assert not hasattr(params[2].data(), "_on_grad")


def test_overlap_and_bucket_settings_from_the_environment(monkeypatch):
    monkeypatch.delenv("MXRS_OVERLAP", raising=False)
    monkeypatch.delenv("MXRS_BUCKET_BYTES", raising=False)
    assert _overlap.overlap_from_env() is True
    assert _overlap.bucket_bytes_from_env() == 4 << 20
    monkeypatch.setenv("MXRS_OVERLAP", "0")
    monkeypatch.setenv("MXRS_BUCKET_BYTES", "0")
    assert _overlap.overlap_from_env() is False
    assert _overlap.bucket_bytes_from_env() == 0
    assert gluon.Trainer([gluon.Parameter("p", shape=(1,))], "sgd")._overlap is False
    monkeypatch.setenv("MXRS_OVERLAP", "maybe")
    with pytest.raises(MXNetError, match="MXRS_OVERLAP must be 1 or 0.*'maybe'"):
        _overlap.overlap_from_env()
    monkeypatch.setenv("MXRS_BUCKET_BYTES", "4MB")
    with pytest.raises(MXNetError, match="MXRS_BUCKET_BYTES.*'4MB'"):
        _overlap.bucket_bytes_from_env()
