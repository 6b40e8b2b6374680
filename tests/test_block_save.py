"""Block.save / Block.load: round trip in mxrs, and files that MXNet 1.9.1's Block.load reads."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError


def _net(lib):
    class Chain(lib.gluon.nn.Block):
        def add(self, block):
            self._children[block.name + str(len(self._children))] = block

        def forward(self, x):
            for block in self._children.values():
                x = block(x)
            return x

    inner = Chain()
    inner.add(lib.gluon.nn.Dense(4))
    net = Chain()
    net.add(inner)
    net.add(lib.gluon.nn.Dense(3))
    return net


def test_save_load_round_trip(tmp_path):
    net = _net(mx)
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.arange(10, dtype="float32").reshape(2, 5))
    want = net(x).asnumpy()
    net.save(str(tmp_path / "m"))
    other = _net(mx)  # new names: the saved ones come back
    other.load(str(tmp_path / "m"))
    np.testing.assert_allclose(other(x).asnumpy(), want, rtol=1e-6)
    assert [b.name for b in other._children.values()] == [b.name for b in net._children.values()]


def test_load_mismatched_structure(tmp_path):
    net = _net(mx)
    net.initialize()
    net(mx.nd.ones((1, 5)))
    net.save(str(tmp_path / "m"))
    with pytest.raises(MXNetError):
        mx.gluon.nn.Dense(3).load(str(tmp_path / "m"))


def test_mxnet_loads_mxrs_files(tmp_path):
    net = _net(mx)
    net.initialize()
    net.hybridize()
    x = np.arange(10, dtype="float32").reshape(2, 5)
    want = net(mx.nd.array(x)).asnumpy()
    net.save(str(tmp_path / "m"))
    script = f"""
import mxnet as mx
class Chain(mx.gluon.nn.Block):
    def add(self, block):
        self._children[block.name + str(len(self._children))] = block
    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x
inner = Chain()
inner.add(mx.gluon.nn.Dense(4))
net = Chain()
net.add(inner)
net.add(mx.gluon.nn.Dense(3))
net.load({str(tmp_path / "m")!r})
arrays["out"] = net(mx.nd.array(inputs["x"])).asnumpy()
"""
    _, got = mxnet_ref.run(tmp_path, script, x=x)
    np.testing.assert_allclose(got["out"], want, rtol=1e-5, atol=1e-6)
