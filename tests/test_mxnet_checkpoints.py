"""Models written by Apache MXNet 1.9.1 (symbol JSON + params) load in mxrs and give MXNet's
outputs; a model fine-tuned by mxrs loads back in MXNet.

The networks are MXNet's own example symbols (``symbols/lenet.py``, ``symbols/resnet.py`` of
``../shared/mxnet-examples``), built and initialized by MXNet, trained a few steps there so that
BatchNorm's moving statistics are not at their initial values.
"""

from pathlib import Path

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest

SYMBOLS = Path(__file__).resolve().parent.parent.parent / "shared" / "mxnet-examples"
SYMBOLS = SYMBOLS / "image-classification"

pytestmark = pytest.mark.skipif(
    not SYMBOLS.is_dir(), reason="MXNet's example symbols live in ../shared, not beside this clone"
)

WRITE = """
import sys
sys.path.insert(0, {symbols!r})
import mxnet as mx
from importlib import import_module
net = import_module('symbols.{network}').get_symbol(**{kwargs})
mod = mx.mod.Module(net, context=mx.cpu())
shape = (8,) + {image}
mx.random.seed(3)
mod.bind([('data', shape)], [('softmax_label', (8,))])
mod.init_params(mx.init.Xavier(rnd_type='gaussian', factor_type='in', magnitude=2))
mod.init_optimizer(optimizer='sgd', optimizer_params={{'learning_rate': 0.05, 'momentum': 0.9}})
rng = np.random.RandomState(0)
for _ in range(3):  # a few steps: BatchNorm's moving statistics move away from 0 and 1
    batch = mx.io.DataBatch([mx.nd.array(rng.uniform(-1, 1, shape))],
                            [mx.nd.array(rng.randint(0, 10, 8))])
    mod.forward_backward(batch)
    mod.update()
mx.nd.waitall()  # MXNet 1.9.1 can read BatchNorm's moving statistics before its last write
mod.save_checkpoint('model', 3)
x = mx.nd.array(inputs['x'])
mod.forward(mx.io.DataBatch([x], [mx.nd.zeros(8)]), is_train=False)
arrays['out'] = mod.get_outputs()[0].asnumpy()
"""

READ_BACK = """
sym, arg, aux = mx.model.load_checkpoint('tuned', 4)
mod = mx.mod.Module(sym, context=mx.cpu())
mod.bind([('data', inputs['x'].shape)], [('softmax_label', (8,))], for_training=False)
mod.set_params(arg, aux)
mod.forward(mx.io.DataBatch([mx.nd.array(inputs['x'])], [mx.nd.zeros(8)]), is_train=False)
arrays['out'] = mod.get_outputs()[0].asnumpy()
"""

CASES = {
    "lenet": ("lenet", {"num_classes": 10}, (1, 28, 28)),
    "resnet18": (
        "resnet",
        {"num_classes": 10, "num_layers": 18, "image_shape": "3,32,32"},
        (3, 32, 32),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_mxnet_checkpoint_gives_mxnet_outputs_and_goes_back(tmp_path, case, monkeypatch):
    network, kwargs, image = CASES[case]
    x = np.random.RandomState(1).uniform(-1, 1, (8, *image)).astype(np.float32)
    script = WRITE.format(symbols=str(SYMBOLS), network=network, kwargs=kwargs, image=image)
    _, ref = mxnet_ref.run(tmp_path, script, x=x)
    monkeypatch.chdir(tmp_path)

    sym, arg, aux = mx.model.load_checkpoint("model", 3)
    if network == "resnet":
        assert any(k.endswith("moving_var") for k in aux)
        moved = [
            k for k, v in aux.items() if k.endswith("moving_mean") and abs(v.asnumpy()).sum() > 0
        ]
        assert moved  # the statistics are trained ones, so inference really uses them
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind([("data", x.shape)], [("softmax_label", (8,))], for_training=False)
    mod.set_params(arg, aux)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros(8)]), is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    np.testing.assert_allclose(out, ref["out"], rtol=1e-4, atol=1e-6)

    # Module.load, then a few steps of training in mxrs
    tuned = mx.mod.Module.load("model", 3, context=mx.cpu())
    tuned.bind([("data", x.shape)], [("softmax_label", (8,))])
    tuned.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(np.arange(8) % 10)])
    tuned.forward_backward(batch)
    tuned.update()
    tuned.save_checkpoint("tuned", 4)
    tuned.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros(8)]), is_train=False)
    mine = tuned.get_outputs()[0].asnumpy()
    assert not np.allclose(mine, out, atol=1e-6)  # it did train
    _, back = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + READ_BACK, x=x)
    np.testing.assert_allclose(back["out"], mine, rtol=1e-4, atol=1e-6)
