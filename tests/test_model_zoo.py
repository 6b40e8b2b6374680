"""gluon.model_zoo.vision against Apache MXNet 1.9.1's zoo: names, shapes, signatures, numbers.

The code that builds and runs the models is written once (``_SHARED``) and run word for word
under both libraries (``mx`` is either one); MXNet 1.9.1 runs it through ``mxnet_ref``.
"""

import textwrap
from concurrent.futures import ThreadPoolExecutor

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs.base import MXNetError
from mxrs.gluon.model_zoo import vision

MODELS = [
    *(f"resnet{n}_v{v}" for v in (1, 2) for n in (18, 34, 50, 101, 152)),
    *(f"vgg{n}{bn}" for bn in ("", "_bn") for n in (11, 13, 16, 19)),
    "alexnet",
    *(f"mobilenet{m}" for m in ("1.0", "0.75", "0.5", "0.25")),
    *(f"mobilenetv2_{m}" for m in ("1.0", "0.75", "0.5", "0.25")),
]

# Public callables whose signatures must be MXNet's (parameter names, kinds and defaults; the
# defaults of ``ctx`` and ``root`` are mxrs's own).
SIGNATURES = [
    "get_model",
    "get_resnet",
    "resnet18_v1",
    "ResNetV1",
    "ResNetV2",
    "BasicBlockV1",
    "BasicBlockV2",
    "BottleneckV1",
    "BottleneckV2",
    "get_vgg",
    "VGG",
    "alexnet",
    "AlexNet",
    "get_mobilenet",
    "get_mobilenet_v2",
    "MobileNet",
    "MobileNetV2",
]

_SHARED = """
import inspect
import numpy as np


def parameter_lists(mx, names):
    # every model built in one naming scope, in order, so the counters (resnetv11_, vgg4_,
    # ...) are part of what is compared
    out = {}
    with mx.name.NameManager():
        for name in names:
            net = mx.gluon.model_zoo.vision.get_model(name)
            net.initialize(mx.init.Zero())  # cheap; layers' own initializers still run
            size = 64 if name == "alexnet" else 32  # AlexNet's pools need 63 pixels
            net(mx.nd.zeros((1, 3, size, size)))
            out[name] = [[k, list(p.shape), p.grad_req] for k, p in net.collect_params().items()]
    return out


def signature(fn):
    return [
        [p.name, str(p.kind), None if p.name in ("ctx", "root") else repr(p.default)]
        for p in inspect.signature(fn).parameters.values()
    ]


def build(mx, model, x):
    with mx.name.NameManager():
        net = getattr(mx.gluon.model_zoo.vision, model)(classes=10)
    net.initialize()
    net(mx.nd.array(x))  # finishes the deferred initialization (predict mode: no statistic moves)
    return net


def load(net, weights):
    for k, p in net.collect_params().items():
        p.set_data(weights[k])


def run(mx, net, x, head, dtype, backward):
    # predict-mode output, then a training-mode forward (and backward) under record
    net.cast(dtype)
    x = mx.nd.array(x, dtype=dtype)
    res = {"predict": net(x).asnumpy()}
    with mx.autograd.record():
        out = net(x)
    res["train"] = out.asnumpy()
    if backward:
        out.backward(mx.nd.array(head, dtype=dtype))
    for k, p in net.collect_params().items():
        if p.grad_req != "null" and backward:
            res["grad:" + k] = p.grad().asnumpy()
        if "running" in k:
            res["stat:" + k] = p.data().asnumpy()
    return res
"""

# MXNet's side of the numeric tests: random weights (BatchNorm's four vectors away from their
# 1/0 defaults, so every one of them matters), returned by name with the results.
_MAKE_WEIGHTS = """
import mxnet as mx
net = build(mx, inputs["model"].item(), inputs["x"])
net.initialize(mx.init.Xavier(magnitude=2), force_reinit=True)
rng = np.random.default_rng(7)
for k, p in net.collect_params().items():
    if k.endswith(("gamma", "running_var")):
        p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
    elif k.endswith(("beta", "running_mean")):
        p.set_data(mx.nd.array(rng.normal(0.0, 0.2, p.shape)))
weights = {k: p.data().asnumpy() for k, p in net.collect_params().items()}
arrays.update({"w:" + k: v for k, v in weights.items()})
"""


def _mxnet(tmp_path, script, **inputs):
    return mxnet_ref.run(tmp_path, _SHARED + textwrap.dedent(script), **inputs)


def _shared():
    scope = {}
    exec(_SHARED, scope)
    return scope


def _weights_and_runs(tmp_path, model, x, head, runs):
    """MXNet's weights and its results of ``run`` for each ``(dtype, backward)`` of ``runs``."""
    script = _MAKE_WEIGHTS
    for dtype, backward in runs:
        script += f"""
net = build(mx, inputs["model"].item(), inputs["x"])
load(net, {{k: mx.nd.array(v) for k, v in weights.items()}})
res = run(mx, net, inputs["x"], inputs["head"], "{dtype}", {backward})
arrays.update({{"{dtype}:" + k: v for k, v in res.items()}})
"""
    _, arrays = _mxnet(tmp_path, script, model=np.array(model), x=x, head=head)
    weights = {k[2:]: v for k, v in arrays.items() if k.startswith("w:")}
    return weights, arrays


def _mxrs_run(model, x, head, weights, dtype, backward):
    s = _shared()
    net = s["build"](mx, model, x)
    s["load"](net, {k: mx.nd.array(v) for k, v in weights.items()})
    return s["run"](mx, net, x, head, dtype, backward)


def _close(got, want, rtol, atol_frac, what):
    """``got`` equals ``want`` within ``rtol`` and an atol of ``atol_frac`` of ``want``'s
    largest magnitude."""
    atol = atol_frac * float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def test_every_model_has_mxnets_parameter_names_shapes_order_and_grad_reqs(tmp_path):
    script = """
        import mxnet as mx
        try:
            mx.gluon.model_zoo.vision.get_model("no-such-net")
        except ValueError as err:
            message = str(err)
        vision = mx.gluon.model_zoo.vision
        result = {
            "params": parameter_lists(mx, inputs["names"].tolist()),
            "message": message,
            "signatures": {n: signature(getattr(vision, n)) for n in inputs["sigs"].tolist()},
        }
        """
    s = _shared()
    # MXNet builds its 27 models in its own process while mxrs builds them here
    with ThreadPoolExecutor(1) as pool:
        ref = pool.submit(
            _mxnet, tmp_path, script, names=np.array(MODELS), sigs=np.array(SIGNATURES)
        )
        got = s["parameter_lists"](mx, MODELS)
        result, _ = ref.result()
    for name in MODELS:
        assert got[name] == result["params"][name], name
    # the first parameters of a few models, spelled out
    assert got["resnet18_v1"][:2] == [
        ["resnetv10_conv0_weight", [64, 3, 7, 7], "write"],
        ["resnetv10_batchnorm0_gamma", [64], "write"],
    ]
    assert ["resnetv10_stage1_batchnorm0_running_mean", [64], "null"] in got["resnet18_v1"]
    assert got["resnet34_v1"][0][0] == "resnetv11_conv0_weight"
    assert got["resnet18_v2"][0] == ["resnetv20_batchnorm0_gamma", [3], "null"]
    assert got["mobilenetv2_0.25"][-1] == [
        "mobilenetv23_output_pred_weight",
        [1000, 1280, 1, 1],
        "write",
    ]
    # every name mxrs offers is one of MXNet's, and it offers all it has
    listed = result["message"].split("\n\t")[1:]
    assert set(MODELS) <= set(listed)
    assert set(vision._MODELS) == set(MODELS)
    for n in SIGNATURES:
        assert s["signature"](getattr(vision, n)) == result["signatures"][n], n


def test_resnet18_v1_training_step_matches_mxnet(tmp_path):
    """Output, every gradient and the moved running statistics of one training step, and the
    predict-mode output, from MXNet's weights.

    Gradients are compared in float64, where both libraries agree to ~1e-13: in float32 an
    activation within ~1e-7 of zero may land on either side of ReLU in the two libraries, and
    that one flipped unit moves the gradients of the layers below it by up to ~20% of their
    largest value (seen with another seed). Outputs and statistics don't have that problem and
    are compared in float32 too, at rtol 1e-4 (and an atol of 1e-5 of the largest value). The
    64x64 images keep 8 values per channel in stage 4's BatchNorms (see the ResNet-50 test).
    MXNet keeps BatchNorm's momentum as a float32 (1 - 0.9f = 0.100000024), so the float64
    statistics agree to 1e-6 (relative, and of the largest value) only.
    """
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 64, 64)).astype(np.float32)
    head = rng.standard_normal((2, 10)).astype(np.float32)
    runs = [("float32", True), ("float64", True)]
    weights, want = _weights_and_runs(tmp_path, "resnet18_v1", x, head, runs)
    assert len(weights) == 102
    for dtype, backward in runs:
        got = _mxrs_run("resnet18_v1", x, head, weights, dtype, backward)
        keys = {k[len(dtype) + 1 :] for k in want if k.startswith(dtype + ":")}
        assert set(got) == keys
        assert sum(k.startswith("grad:") for k in keys) == 62
        assert sum(k.startswith("stat:") for k in keys) == 40
        tight = dtype == "float64"
        for k, v in got.items():
            w = want[f"{dtype}:{k}"]
            assert v.dtype == w.dtype == np.dtype(dtype), k
            if k.startswith("grad:"):
                if tight:
                    _close(v, w, 1e-7, 1e-10, k)
            elif k.startswith("stat:"):
                _close(v, w, 1e-6 if tight else 1e-4, 1e-6 if tight else 1e-5, k)
            else:
                _close(v, w, 1e-9 if tight else 1e-4, 1e-12 if tight else 1e-5, k)
        # the step did move the statistics away from MXNet's weights
        stat = "stat:resnetv10_stage1_batchnorm0_running_mean"
        assert not np.allclose(got[stat], weights[stat[5:]])


def test_resnet50_v2_forward_matches_mxnet(tmp_path):
    """Bottleneck and pre-activation units: predict-mode and training-mode outputs in float32.

    64x64 images leave 2x2 maps in stage 4, so its training-mode BatchNorms normalise 8 values
    per channel: with 32x32 images they see 2 (one per sample), where ``d / sqrt(d^2 + eps)``
    amplifies float32 rounding up to 1e-3 (4 samples) or 1e-1 (2 samples) of the output.
    """
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 64, 64)).astype(np.float32)
    head = np.zeros((2, 10), np.float32)
    weights, want = _weights_and_runs(tmp_path, "resnet50_v2", x, head, [("float32", False)])
    got = _mxrs_run("resnet50_v2", x, head, weights, "float32", False)
    for k in ("predict", "train"):
        _close(got[k], want["float32:" + k], 1e-4, 1e-4, k)
    # the first BatchNorm has neither scale nor offset: it stays where it was, as in MXNet
    stat = "stat:resnetv20_batchnorm0_running_mean"
    np.testing.assert_array_equal(got[stat], want["float32:" + stat])


def test_get_model_on_an_unknown_name_lists_the_available_ones():
    with pytest.raises(vision.UnknownModelError, match="Model resnet19_v1 is not supported") as e:
        vision.get_model("resnet19_v1")
    assert isinstance(e.value, ValueError) and isinstance(e.value, MXNetError)
    assert "\n\t".join(sorted(MODELS)) in str(e.value)
    assert vision.get_model("ResNet18_V1", classes=3).output.weight.shape == (3, 512)


@pytest.mark.parametrize(
    "make",
    [
        lambda: vision.resnet18_v1(pretrained=True),
        lambda: vision.get_model("vgg11_bn", pretrained=True),
        lambda: vision.alexnet(pretrained=True, root="/nowhere"),
        lambda: vision.mobilenet_v2_0_25(pretrained=True),
    ],
)
def test_pretrained_weights_are_refused_clearly(make):
    with pytest.raises(MXNetError, match="mxrs ships no pretrained weights"):
        make()


def test_bad_depths_and_versions_are_refused():
    with pytest.raises(MXNetError, match=r"Invalid number of layers: 20. Options are \[18, 34"):
        vision.get_resnet(1, 20)
    with pytest.raises(MXNetError, match="Invalid resnet version: 3"):
        vision.get_resnet(3, 18)
    with pytest.raises(MXNetError, match="Invalid number of layers: 12"):
        vision.get_vgg(12)
    with pytest.raises(MXNetError, match="one more channel count than stages"):
        vision.ResNetV1(vision.BasicBlockV1, [2, 2], [64, 64])


def test_thumbnail_resnet_runs_on_cifar_sized_images():
    with mx.name.NameManager():
        net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize()
    assert net(mx.nd.zeros((2, 3, 32, 32))).shape == (2, 10)
    names = list(net.collect_params().keys())
    assert names[:2] == ["resnetv10_conv0_weight", "resnetv10_stage1_conv0_weight"]
    assert net.collect_params()["resnetv10_conv0_weight"].shape == (64, 3, 3, 3)


_TRAINER = """
import numpy as np


def trainer_steps(mx, steps):
    # what each Trainer step does to one running mean on two devices, and to one weight
    ctx = [mx.cpu(0), mx.cpu(1)]
    with mx.name.NameManager():
        net = mx.gluon.model_zoo.vision.resnet18_v1(classes=4)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    params = net.collect_params()
    trainer = mx.gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="device")
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    stat = params["resnetv10_stage2_batchnorm0_running_mean"]
    weight = params["resnetv10_stage2_conv0_weight"]
    rng = np.random.default_rng(3)
    seen = []
    for _ in range(steps):
        data = rng.standard_normal((4, 3, 32, 32)).astype(np.float32)
        xs = mx.gluon.utils.split_and_load(data, ctx)
        ys = mx.gluon.utils.split_and_load(np.array([0, 1, 2, 3], np.float32), ctx)
        with mx.autograd.record():
            losses = [loss_fn(net(x), y) for x, y in zip(xs, ys)]
        for loss in losses:
            loss.backward()
        before = [a.asnumpy().copy() for a in stat.list_data()]
        old = weight.data(ctx[0]).asnumpy().copy()
        trainer.step(4)
        after = [a.asnumpy() for a in stat.list_data()]
        w0, w1 = (weight.data(c).asnumpy() for c in ctx)
        seen.append({
            "device 0 kept": bool(np.array_equal(after[0], before[0])),
            "device 1 kept": bool(np.array_equal(after[1], before[1])),
            "device 1 got device 0's": bool(np.array_equal(after[1], before[0])),
            "weight moved": not bool(np.allclose(w0, old)),
            "weights equal": bool(np.allclose(w0, w1, rtol=1e-5, atol=1e-7)),
        })
    return seen
"""


def test_trainer_steps_treat_running_statistics_as_mxnet_does(tmp_path):
    """running_mean/var have grad_req 'null': no step pushes or updates them, so each device
    keeps the statistics of its own batches; only the first step, which initializes every
    parameter on the store, copies the first device's to the other (as MXNet's Trainer does)."""
    want, _ = mxnet_ref.run(tmp_path, _TRAINER + "import mxnet\nresult = trainer_steps(mxnet, 3)\n")
    scope = {}
    exec(_TRAINER, scope)
    got = scope["trainer_steps"](mx, 3)
    assert got == want
    assert [s["device 1 got device 0's"] for s in got] == [True, False, False]
    assert all(s["device 0 kept"] and s["weight moved"] and s["weights equal"] for s in got)
    assert got[1]["device 1 kept"] and got[2]["device 1 kept"]
