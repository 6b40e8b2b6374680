"""Pulls from a backup beside the worker, end to end: a dist_sync job whose servers and workers
are on two loopback addresses (standing for two machines; each worker pulls the other
machine's key ranges from the backup beside it) trains to the weights of the same job on one
address, with the servers' optimizer and without."""

import subprocess
import sys

import pytest
from jobs import TIMEOUT, node_env, start_worker
from mxrs.launcher.scheduler import start_scheduler

TRAIN = """
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon

kv = mx.kv.create('dist_sync')
mx.random.seed(3)
net = gluon.nn.Sequential()
net.add(gluon.nn.Dense(64, in_units=40, activation='relu'), gluon.nn.Dense(5, in_units=64))
net.initialize(mx.init.Xavier())
on_servers = ON_SERVERS
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9},
                        kvstore=kv, update_on_kvstore=on_servers)
rng = np.random.RandomState(kv.rank)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
for _ in range(6):
    x = mx.nd.array(rng.rand(16, 40))
    y = mx.nd.array(rng.randint(0, 5, 16))
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(16)
w = np.concatenate([p.data().asnumpy().ravel() for p in net.collect_params().values()])
print(repr(w.astype(np.float64).tolist()), flush=True)
"""


def _train(hosts, on_servers):
    """The job with server i and worker i on ``hosts[i]``; each worker's final weights."""
    # Keys above 100 elements are cut over both servers: every key has a range on each.
    extra = {"MXNET_KVSTORE_BIGARRAY_BOUND": 100}
    sched, port = start_scheduler(
        [sys.executable, "-c", "import mxrs"], node_env("scheduler", 0, **extra)
    )
    procs = [sched]
    try:
        for i, host in enumerate(hosts):
            env = node_env("server", port, DMLC_NODE_HOST=host, DMLC_SERVER_ID=i, **extra)
            procs.append(subprocess.Popen([sys.executable, "-c", "import mxrs"], env=env))
        script = TRAIN.replace("ON_SERVERS", repr(on_servers))
        workers = [
            start_worker(port, script, DMLC_NODE_HOST=host, DMLC_WORKER_ID=i, **extra)
            for i, host in enumerate(hosts)
        ]
        outs = [w.communicate(timeout=TIMEOUT) for w in workers]
        for w, (out, err) in zip(workers, outs, strict=True):
            assert w.returncode == 0, out + err
        return [out for out, _ in outs]
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.parametrize("on_servers", [False, True], ids=["sums", "servers-optimizer"])
def test_two_machines_train_to_the_weights_of_one(on_servers):
    one = _train(["127.0.0.1", "127.0.0.1"], on_servers)
    two = _train(["127.0.0.1", "127.0.0.2"], on_servers)
    assert one[0] == one[1]
    assert two == one
