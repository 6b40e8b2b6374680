"""Evaluation metrics (``mx.metric``) against hand-computed values, shape errors, the registry."""

import math

import mxrs as mx
import numpy as np
import pytest
from mxrs import nd
from mxrs.base import MXNetError

PROBS = np.array([[0.3, 0.7], [0.0, 1.0], [0.4, 0.6]])
LABELS = np.array([0, 1, 1])


def test_accuracy_argmax_and_class_ids():
    acc = mx.metric.Accuracy()
    acc.update(nd.array(LABELS), nd.array(PROBS))  # single arrays are wrapped
    assert acc.get() == ("accuracy", 2 / 3)
    # Predictions shaped like the labels are class ids; lists hold one entry per output.
    acc.update([nd.array([1, 0])], [nd.array([1, 1])])
    assert (acc.sum_metric, acc.num_inst) == (3, 5)
    assert acc.get() == ("accuracy", 0.6)


def test_accuracy_takes_numpy_other_contexts_and_an_axis():
    acc = mx.metric.Accuracy(axis=0)
    acc.update([LABELS], [PROBS.T])
    acc.update([nd.array(LABELS, ctx=mx.cpu(1))], [nd.array(PROBS.T, ctx=mx.cpu(1))])
    assert acc.get() == ("accuracy", 4 / 6)
    acc = mx.metric.Accuracy()
    acc.update(LABELS.reshape(3, 1), PROBS)  # (n, 1) labels flatten to the argmax's shape
    assert acc.get()[1] == 2 / 3


def test_local_and_global_values():
    acc = mx.metric.Accuracy()
    assert math.isnan(acc.get()[1])
    acc.update([nd.array([1, 1])], [nd.array([1, 1])])
    acc.reset_local()
    acc.update([nd.array([1, 1])], [nd.array([0, 1])])
    assert acc.get() == ("accuracy", 0.5)
    assert acc.get_global() == ("accuracy", 0.75)
    assert acc.get_name_value() == [("accuracy", 0.5)]
    assert acc.get_global_name_value() == [("accuracy", 0.75)]
    acc.reset()
    assert math.isnan(acc.get_global()[1]) and acc.num_inst == acc.global_num_inst == 0


def test_shape_mismatches_name_both_sides():
    acc = mx.metric.Accuracy()
    with pytest.raises(MXNetError, match="Shape of labels 2 does not match shape of predictions 1"):
        acc.update([nd.array([1]), nd.array([0])], [nd.array(PROBS)])
    with pytest.raises(MXNetError, match="labels 2 does not match shape of predictions 3"):
        acc.update(nd.array([0, 1]), nd.array(PROBS))
    with pytest.raises(MXNetError, match=r"labels \(2,\) does not match .* \(3,\)"):
        mx.metric.check_label_shapes(np.zeros(2), np.zeros(3), shape=True)
    labels, preds = mx.metric.check_label_shapes(nd.zeros((2,)), nd.zeros((2, 3)), wrap=True)
    assert isinstance(labels, list) and isinstance(preds, list)


def test_top_k_accuracy():
    scores = np.array([[0.1, 0.5, 0.4, 0.0], [0.7, 0.1, 0.05, 0.15], [0.24, 0.3, 0.26, 0.2]])
    top2 = mx.metric.TopKAccuracy(top_k=2)
    assert top2.name == "top_k_accuracy_2"
    top2.update(nd.array([2, 3, 0]), nd.array(scores))  # in top 2: yes, yes, no
    assert top2.get()[1] == 2 / 3
    top3 = mx.metric.create("top_k_accuracy", top_k=3)
    top3.update([nd.array([2, 3, 0])], [nd.array(scores)])
    assert top3.get() == ("top_k_accuracy_3", 1.0)
    top1 = mx.metric.TopKAccuracy()
    top1.update(nd.array([1, 0, 2]), nd.array(scores))
    assert top1.get()[1] == 2 / 3
    big = mx.metric.TopKAccuracy(top_k=10)  # more than the classes: everything counts
    big.update(nd.array([2, 3, 0]), nd.array(scores))
    assert big.get()[1] == 1.0
    with pytest.raises(MXNetError, match="no more than 2 dims"):
        top2.update(nd.zeros((1,)), nd.zeros((1, 2, 2)))


def test_cross_entropy_and_nll():
    want = -(np.log(0.3 + 1e-12) + np.log(1.0 + 1e-12) + np.log(0.6 + 1e-12)) / 3
    for name, metric in [
        ("cross-entropy", mx.metric.create("ce")),
        ("nll-loss", mx.metric.create("nll_loss")),
    ]:
        metric.update(nd.array(LABELS), nd.array(PROBS, dtype=np.float64))
        assert metric.name == name
        assert metric.get()[1] == pytest.approx(want, rel=1e-12)
        assert metric.num_inst == 3
    with pytest.raises(MXNetError, match="2 labels for 3 predictions"):
        mx.metric.CrossEntropy().update([nd.array([[0, 1]])], [nd.array(PROBS)])


def test_regression_metrics_average_per_batch():
    label = np.array([1.0, 2.0, 4.0])
    pred = np.array([[1.5], [2.0], [1.0]])  # (n, 1) against 1-D labels, as MXNet reshapes
    second = (np.array([0.0, 0.0]), np.array([1.0, 3.0]))
    cases = [
        (mx.metric.MAE(), [(0.5 + 0 + 3) / 3, 2.0]),
        (mx.metric.MSE(), [(0.25 + 0 + 9) / 3, 5.0]),
        (mx.metric.RMSE(), [math.sqrt((0.25 + 9) / 3), math.sqrt(5.0)]),
    ]
    for metric, per_batch in cases:
        metric.update(nd.array(label), nd.array(pred))
        metric.update([second[0]], [second[1]])
        assert metric.num_inst == 2
        assert metric.get()[1] == pytest.approx(sum(per_batch) / 2, rel=1e-6)


def test_loss_averages_every_value():
    loss = mx.metric.create("loss")
    loss.update(None, nd.array([[1.0, 2.0], [3.0, 4.0]]))
    loss.update(None, [nd.array([5.0], ctx=mx.cpu(1)), np.array([6.0, 7.0])])
    assert (loss.sum_metric, loss.num_inst) == (28.0, 7)
    assert loss.get() == ("loss", 4.0)


def test_composite_metric():
    comp = mx.metric.CompositeEvalMetric()
    comp.add("acc")
    comp.add(mx.metric.CrossEntropy())
    comp.update([nd.array(LABELS)], [nd.array(PROBS)])
    names, values = comp.get()
    assert names == ["accuracy", "cross-entropy"]
    assert values[0] == 2 / 3 and values[1] == pytest.approx(-np.log([0.3, 1, 0.6]).mean(), 1e-6)
    assert isinstance(comp.get_metric(1), mx.metric.CrossEntropy)
    with pytest.raises(MXNetError, match="Metric index 2 is out of range"):
        comp.get_metric(2)
    comp.reset_local()
    assert all(math.isnan(v) for v in comp.get()[1])
    assert comp.get_global()[1][0] == 2 / 3
    comp.reset()
    assert all(math.isnan(v) for v in comp.get_global()[1])
    assert mx.metric.create(["acc", "mse"]).get()[0] == ["accuracy", "mse"]
    nested = mx.metric.CompositeEvalMetric([comp, "mae"])
    assert nested.get()[0] == ["accuracy", "cross-entropy", "mae"]


def test_update_dict_picks_names():
    acc = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    acc.update_dict(
        {"lab": nd.array(LABELS), "other": nd.array([9])},
        {"out": nd.array(PROBS), "aux": nd.array([9])},
    )
    assert acc.get()[1] == 2 / 3
    comp = mx.metric.CompositeEvalMetric(["acc"], label_names=["lab"], output_names=["out"])
    comp.update_dict(
        {"lab": nd.array(LABELS), "x": nd.array([0])}, {"out": nd.array(PROBS), "y": nd.array([0])}
    )
    assert comp.get()[1] == [2 / 3]


def test_custom_metrics():
    def err_count(label, pred):
        assert isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)
        return float((pred.argmax(axis=1) != label).sum()), len(label)

    custom = mx.metric.create(err_count)
    assert isinstance(custom, mx.metric.CustomMetric) and custom.name == "err_count"
    custom.update(nd.array(LABELS), nd.array(PROBS))
    assert custom.get() == ("err_count", 1 / 3)

    metric = mx.metric.np(lambda label, pred: float(np.abs(label - pred).mean()))
    assert metric.name == "custom(<lambda>)"
    metric.update([nd.array([1.0, 2.0])], [nd.array([2.0, 2.0])])
    metric.update([nd.array([0.0])], [nd.array([0.0])])
    assert metric.get()[1] == 0.25
    extra = mx.metric.CustomMetric(lambda label, pred: 1.0, name="one", allow_extra_outputs=True)
    extra.update([nd.array([1.0])], [nd.array([1.0]), nd.array([2.0])])
    assert (extra.name, extra.num_inst) == ("one", 1)


def test_registry():
    assert type(mx.metric.create("acc")) is mx.metric.Accuracy
    assert type(mx.metric.create("Accuracy")) is mx.metric.Accuracy
    assert type(mx.metric.create("top_k_acc", top_k=2)) is mx.metric.TopKAccuracy
    assert type(mx.metric.create("composite")) is mx.metric.CompositeEvalMetric
    metric = mx.metric.MSE()
    assert mx.metric.create(metric) is metric
    with pytest.raises(MXNetError, match="metric 'nosuch' is not registered.*accuracy"):
        mx.metric.create("nosuch")
    with pytest.raises(MXNetError, match="got int"):
        mx.metric.create(3)

    @mx.metric.register
    @mx.metric.alias("half_acc")
    class HalfAccuracy(mx.metric.Accuracy):
        def get(self):
            return self.name, super().get()[1] / 2

    half = mx.metric.create("half_acc", name="half")
    half.update(nd.array([1]), nd.array([1]))
    assert half.get() == ("half", 0.5)
    assert type(mx.metric.create("halfaccuracy")) is HalfAccuracy


def test_config_and_str():
    acc = mx.metric.Accuracy(axis=1, name="acc1")
    assert acc.get_config() == {
        "axis": 1,
        "metric": "Accuracy",
        "name": "acc1",
        "output_names": None,
        "label_names": None,
    }
    assert str(acc).startswith("EvalMetric: {'acc1': nan")
    assert mx.metric.CompositeEvalMetric(["mse"]).get_config()["metrics"][0]["name"] == "mse"
    with pytest.raises(NotImplementedError):
        mx.metric.EvalMetric("base").update([], [])
