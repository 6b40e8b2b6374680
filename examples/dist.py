"""The distributed-training tutorial: LeNet on MNIST over workers and parameter servers.

Every worker trains on its own part of the data (``SplitSampler``) on its devices; the servers
sum the workers' gradients and apply SGD. Launch it as a job::

    mxrs-launch local -n 2 -s 2 python examples/dist.py
    mxrs-launch ssh -n 2 -s 2 -H hosts --sync-dst-dir /tmp/dist python /tmp/dist/examples/dist.py
"""

import argparse
import os

import mxrs as mx
import numpy as np
from mxrs import autograd, gluon, kv
from mxrs.gluon import nn
from mxrs.gluon.data import SplitSampler

HERE = os.path.dirname(os.path.abspath(__file__))

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("--data-dir", default=os.path.join(HERE, os.pardir, "data", "mnist"))
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--gpus-per-machine", type=int, default=0, help="0: train on the CPU")
args = p.parse_args()

# Step 1: create the distributed key-value store.
store = kv.create('dist')
print("Total number of workers: %d" % store.num_workers)
print("This worker's rank: %d" % store.rank)

batch_size = 32
ctx = [mx.gpu(i) for i in range(args.gpus_per_machine)] or [mx.cpu()]


def transform(data, label):
    return nd_image(data), label.astype(np.float32)


def nd_image(data):
    return mx.nd.array(data).transpose((2, 0, 1)).astype(np.float32) / 255


# Step 3: split the training data: each worker loads its own part.
train_data = gluon.data.DataLoader(
    gluon.data.vision.MNIST(root=args.data_dir, train=True, transform=transform),
    batch_size, sampler=SplitSampler(6000, store.num_workers, store.rank))
test_data = gluon.data.DataLoader(
    gluon.data.vision.MNIST(root=args.data_dir, train=False, transform=transform),
    batch_size, shuffle=False)

net = nn.Sequential()
with net.name_scope():
    net.add(nn.Conv2D(channels=20, kernel_size=5, activation='relu'))
    net.add(nn.MaxPool2D(pool_size=2, strides=2))
    net.add(nn.Conv2D(channels=50, kernel_size=5, activation='relu'))
    net.add(nn.MaxPool2D(pool_size=2, strides=2))
    net.add(nn.Flatten())
    net.add(nn.Dense(512, activation="relu"))
    net.add(nn.Dense(10))
net.collect_params().initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)

# Step 2: the trainer reduces gradients and updates weights through the distributed store.
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': .01, 'momentum': .9},
                        kvstore=store)
softmax_cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()


def forward_backward(net, data, label):
    with autograd.record():
        losses = [softmax_cross_entropy(net(X), Y) for X, Y in zip(data, label, strict=True)]
    for loss in losses:
        loss.backward()


# Step 4: train a batch on this worker's devices.
def train_batch(batch, ctx, net, trainer):
    data = gluon.utils.split_and_load(batch[0], ctx)
    label = gluon.utils.split_and_load(batch[1], ctx)
    forward_backward(net, data, label)
    trainer.step(batch[0].shape[0])


def evaluate_accuracy(data_iterator, net):
    acc = mx.metric.Accuracy()
    for data, label in data_iterator:
        output = net(data.as_in_context(ctx[0]))
        predictions = mx.nd.argmax(output, axis=1)
        acc.update(preds=predictions, labels=label.as_in_context(ctx[0]))
    return acc.get()[1]


for epoch in range(args.epochs):
    for batch in train_data:
        train_batch(batch, ctx, net, trainer)
    test_accuracy = evaluate_accuracy(test_data, net)
    print("Epoch %d: Test_acc %f" % (epoch, test_accuracy))
