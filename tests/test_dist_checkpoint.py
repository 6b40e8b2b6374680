"""Checkpoints of a distributed job: ``Trainer.save_states`` in a 2-worker, 2-server job writes
the servers' optimizer states; a fresh job that loads them (and the weights) takes the very
steps the first job took after the checkpoint."""

import numpy as np
from jobs import launch

STEPS, SAVED_AFTER = 6, 3

JOB = f"""
import sys
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon

mode = sys.argv[1]
kv = mx.kv.create('dist_sync')
r = kv.rank
mx.random.seed(7)
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(8, activation='relu', in_units=5), gluon.nn.Dense(3, in_units=8))
net.initialize(mx.init.Xavier())
trainer = gluon.Trainer(net.collect_params(), 'sgd',
                        {{'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3}}, kvstore=kv)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

def step(i):
    rng = np.random.RandomState(100 * i + r)
    x = mx.nd.array(rng.normal(size=(8, 5)))
    y = mx.nd.array(rng.randint(0, 3, size=8))
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(8)

first = 0
if mode != 'full':
    net.load_parameters('mid.params')
    if mode == 'resume':
        trainer.load_states('mid.states')
    first = {SAVED_AFTER}
for i in range(first, {STEPS}):
    step(i)
    if mode == 'full' and i + 1 == {SAVED_AFTER}:
        mx.nd.waitall()
        if r == 0:
            net.save_parameters('mid.params')
            trainer.save_states('mid.states')
        kv.barrier()
mx.nd.waitall()
net.save_parameters(f'{{mode}}{{r}}.params')
print('ok', r, flush=True)
"""


def _weights(path):
    import mxrs as mx

    return {k: v.asnumpy() for k, v in sorted(mx.nd.load(str(path)).items())}


def test_a_fresh_job_resumes_from_saved_states_and_takes_the_same_steps(tmp_path):
    for mode in ("full", "resume", "weights_only"):
        r = launch(tmp_path, JOB, args=[mode])
        assert r.returncode == 0, r.stdout + r.stderr
        assert "[worker 0] ok 0" in r.stdout and "[worker 1] ok 1" in r.stdout
    full, resumed = _weights(tmp_path / "full0.params"), _weights(tmp_path / "resume0.params")
    assert full.keys() == resumed.keys() and len(full) == 4
    for name in full:
        np.testing.assert_allclose(resumed[name], full[name], rtol=0, atol=1e-6, err_msg=name)
        # Both workers of a job hold the same weights.
        other = _weights(tmp_path / "resume1.params")[name]
        np.testing.assert_array_equal(other, resumed[name])
    # The states mattered: without them (momentum starting afresh) the steps differ.
    weights_only = _weights(tmp_path / "weights_only0.params")
    assert max(np.abs(full[n] - weights_only[n]).max() for n in full) > 1e-3
