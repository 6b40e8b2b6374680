"""The seeds' LeNet, defined once for the examples, the tests and the benchmarks.

It is the network of the multi-device Gluon tutorial (``gluon_multi_device.py``, which keeps the
tutorial's own text): two convolutions with max-pooling, then three dense layers. ``lenet(nn)``
builds it from a Gluon ``nn`` module, so the benchmarks build the very same network under mxrs
(``mxrs.gluon.nn``) and Apache MXNet (``mxnet.gluon.nn``).
"""


def lenet(nn, classes=10):
    """Return the seeds' LeNet as an ``nn.HybridSequential`` (not initialized, not hybridized).

    Parameters
    ----------
    nn : module
        The Gluon layers module to build with (``mxrs.gluon.nn`` or ``mxnet.gluon.nn``).
    classes : int, default 10
        Outputs of the last layer.
    """
    net = nn.HybridSequential()
    net.add(
        nn.Conv2D(channels=6, kernel_size=5, activation="relu"),
        nn.MaxPool2D(pool_size=2, strides=2),
        nn.Conv2D(channels=16, kernel_size=3, activation="relu"),
        nn.MaxPool2D(pool_size=2, strides=2),
        nn.Flatten(),
        nn.Dense(120, activation="relu"),
        nn.Dense(84, activation="relu"),
        nn.Dense(classes),
    )
    return net
