"""AMP in bfloat16 on a distributed job: 2 workers and 2 servers on dist_sync train a small
ResNet (the model zoo's V1 units) on the shipped MNIST subset, their gradients crossing the
wire as bfloat16 (``set_gradient_compression({'type': 'bf16'})``); both workers end with the
same weights, the classifier ran in bfloat16, and the accuracy is float32's (the single-process
run of ``test_amp.py`` holds it to within 1%; a worker here tests on its own running
statistics, so the two workers' mean must not fall more than 2 points below float32's)."""

import json
import os

import numpy as np
from jobs import launch

WORKER = """
import json, sys
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon, nd
from mxrs.contrib.amp import amp
from mxrs.gluon.model_zoo.vision.resnet import BasicBlockV1, ResNetV1

sys.path.insert(0, sys.argv[1])
from test_amp import _mnist as mnist  # the shipped MNIST subset

bf16 = sys.argv[2] == "bf16"

if bf16:
    amp.init(target_dtype="bfloat16")
kv = mx.kv.create("dist_sync")
if bf16:
    kv.set_gradient_compression({"type": "bf16"})
mx.random.seed(0)
rng = np.random.RandomState(0)
xtr, ytr = mnist("train", 3000)
xte, yte = mnist("t10k", 500)
part = np.arange(kv.rank, len(xtr), kv.num_workers)
net = ResNetV1(BasicBlockV1, [1, 1, 1, 1], [8, 8, 16, 32, 64], classes=10, thumbnail=True)
net.initialize(mx.init.Xavier(magnitude=2.0))
net.hybridize()
trainer = gluon.Trainer(net.collect_params(), "sgd",
                        {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}, kvstore=kv)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
batch = 50
for lr in [0.1, 0.05, 0.01]:
    trainer.set_learning_rate(lr)
    order = part[rng.permutation(len(part))]
    for i in range(0, len(order), batch):
        idx = order[i : i + batch]
        with autograd.record():
            loss = loss_fn(net(nd.array(xtr[idx])), nd.array(ytr[idx]))
        loss.backward()
        trainer.step(batch * kv.num_workers)
out = net(nd.array(xte))
acc = float((out.astype("float32").argmax(axis=1).asnumpy() == yte).mean())
trained = [p for p in net.collect_params().values() if p.grad_req != "null"]
weights = sum(float(np.abs(p.data().asnumpy()).sum()) for p in trained)
with open(f"result{kv.rank}.json", "w") as f:
    json.dump({"acc": acc, "out": np.dtype(out.dtype).name, "weights": weights,
               "param": np.dtype(next(iter(net.collect_params().values())).data().dtype).name}, f)
"""


def _run(tmp_path, kind):
    job = tmp_path / kind
    job.mkdir()
    result = launch(
        job, WORKER, args=[os.path.dirname(os.path.abspath(__file__)), kind], timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads((job / f"result{r}.json").read_text()) for r in range(2)]


def test_bfloat16_amp_trains_on_dist_sync_over_the_bf16_wire(tmp_path):
    fp32 = _run(tmp_path, "fp32")
    bf16 = _run(tmp_path, "bf16")
    assert fp32[0]["out"] == "float32" and bf16[0]["out"] == "bfloat16"
    assert bf16[0]["param"] == "float32"  # AMP keeps the weights in float32
    for r in (fp32, bf16):
        assert (
            r[0]["weights"] == r[1]["weights"]
        )  # the same weights (running statistics are each worker's own)
    # each worker evaluates with its own running statistics: compare the workers' mean
    acc32 = (fp32[0]["acc"] + fp32[1]["acc"]) / 2
    acc16 = (bf16[0]["acc"] + bf16[1]["acc"]) / 2
    assert acc32 > 0.85, fp32
    assert acc16 >= acc32 - 0.02, (bf16, fp32)  # bfloat16 is not less accurate
    assert not np.isclose(bf16[0]["weights"], fp32[0]["weights"], rtol=0, atol=1e-6)
