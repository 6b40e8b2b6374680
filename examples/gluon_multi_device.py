"""The multi-GPU Gluon tutorial: LeNet on MNIST with data parallelism over several devices.

Runs on two GPUs when there are two, else on one GPU twice, else on two CPU contexts
(``mx.cpu(0)`` and ``mx.cpu(1)``), on the MNIST subset shipped in ``data/mnist``::

    python examples/gluon_multi_device.py [--num-epochs 3] [--data-dir DIR]
"""

import argparse
import os

import mxrs as mx
import numpy as np
from mxrs import init
from mxrs.gluon import nn

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-epochs", type=int, default=3)
    p.add_argument("--data-dir", default=os.path.join(HERE, os.pardir, "data", "mnist"))
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)

    n_gpu = mx.context.num_gpus()
    context = [mx.gpu(0), mx.gpu(1)] if n_gpu >= 2 else \
              [mx.gpu(), mx.gpu()] if n_gpu == 1 else \
              [mx.cpu(0), mx.cpu(1)]

    net = nn.Sequential()
    net.add(nn.Conv2D(channels=6, kernel_size=5, activation='relu'),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(channels=16, kernel_size=3, activation='relu'),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Flatten(),
            nn.Dense(120, activation="relu"),
            nn.Dense(84, activation="relu"),
            nn.Dense(10))
    net.initialize(init=init.Xavier(), ctx=context)

    transform = mx.gluon.data.vision.transforms.ToTensor()
    train_data = mx.gluon.data.vision.MNIST(root=args.data_dir, train=True) \
        .transform_first(transform)
    val_data = mx.gluon.data.vision.MNIST(root=args.data_dir, train=False) \
        .transform_first(transform)

    batch_size = 128
    train_loader = mx.gluon.data.DataLoader(train_data, shuffle=True, batch_size=batch_size)
    val_loader = mx.gluon.data.DataLoader(val_data, shuffle=False, batch_size=batch_size)

    trainer = mx.gluon.Trainer(
        params=net.collect_params(),
        optimizer='sgd',
        optimizer_params={'learning_rate': 0.04},
    )
    metric = mx.metric.Accuracy()
    loss_function = mx.gluon.loss.SoftmaxCrossEntropyLoss()

    for epoch in range(args.num_epochs):
        for inputs, labels in train_loader:
            actual_batch_size = inputs.shape[0]
            # Split data among the devices; labels are split the same way.
            inputs = mx.gluon.utils.split_and_load(inputs, ctx_list=context, even_split=False)
            labels = mx.gluon.utils.split_and_load(labels, ctx_list=context, even_split=False)
            with mx.autograd.record():
                outputs = [net(input_slice) for input_slice in inputs]
                losses = [loss_function(o, lab) for o, lab in zip(outputs, labels)]
            for loss in losses:
                loss.backward()
            for lab, o in zip(labels, outputs):
                metric.update(lab, o)
            trainer.step(batch_size=actual_batch_size, ignore_stale_grad=True)
        name, acc = metric.get()
        print('After epoch {}: {} = {}'.format(epoch + 1, name, acc))
        metric.reset()

    for inputs, labels in val_loader:
        inputs = mx.gluon.utils.split_and_load(inputs, ctx_list=context, even_split=False)
        labels = mx.gluon.utils.split_and_load(labels, ctx_list=context, even_split=False)
        for lab, o in zip(labels, [net(x) for x in inputs]):
            metric.update(lab, o)
    name, acc = metric.get()
    print('Validation: {} = {}'.format(name, acc))
    return acc


if __name__ == "__main__":
    main()
