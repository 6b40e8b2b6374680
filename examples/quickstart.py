"""The README's minimal example: a Gluon network trained by a dist_sync job.

mxrs-launch local -n 2 -s 2 python examples/quickstart.py
"""

import mxrs as mx
import numpy as np
from mxrs import autograd, gluon, nd

kv = mx.kv.create("dist_sync")  # this worker's link to the job's servers
net = gluon.nn.HybridSequential()
net.add(gluon.nn.Dense(128, activation="relu"), gluon.nn.Dense(10))
net.initialize(mx.init.Xavier())
trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05}, kvstore=kv)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

rng = np.random.default_rng(kv.rank)  # each worker its own data
x = nd.array(rng.standard_normal((64, 784)))
y = nd.array(rng.integers(0, 10, 64))
for _ in range(50):
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(64)  # gradients summed over the workers, weights updated on the servers
print(f"worker {kv.rank}: loss {loss.mean().asscalar():.3f}")
