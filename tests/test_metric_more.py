"""F1, MCC, Perplexity, PearsonCorrelation and PCC against hand-computed values; create(JSON)."""

import copy
import json
import math

import mxrs as mx
import numpy as np
import pytest
from mxrs import nd
from mxrs.base import MXNetError
from mxrs.metric.base import _REGISTRY


def _scores(ids):
    """(n, 2) one-hot scores whose argmax is ``ids``."""
    return nd.array(np.eye(2)[np.asarray(ids)])


# ----------------------------------------------------------------- F1 and MCC
def test_f1_and_mcc_of_one_batch_by_hand():
    # labels 1 1 0 0 1 0 / preds 1 0 0 1 1 0: tp=2 fn=1 fp=1 tn=2
    # precision = recall = 2/3, so F1 = 2/3; MCC = (2*2 - 1*1) / sqrt(3*3*3*3) = 1/3
    labels, preds = nd.array([1, 1, 0, 0, 1, 0]), [1, 0, 0, 1, 1, 0]
    for average in ("macro", "micro"):
        f1 = mx.metric.F1(average=average)
        f1.update([labels], [_scores(preds)])
        assert f1.get()[0] == "f1"
        assert f1.get()[1] == pytest.approx(2 / 3)
        mcc = mx.metric.create("MCC", average=average)
        mcc.update([labels], [nd.array(preds)])  # class ids shaped like the labels
        assert mcc.get() == ("mcc", pytest.approx(1 / 3))


def test_f1_mcc_macro_averages_calls_micro_pools_counts():
    # call A: labels 1 1 0 0 / preds 1 0 0 0: tp=1 fn=1 fp=0 tn=2
    #   F1 = 2*1*(1/2) / (1 + 1/2) = 2/3; MCC = (1*2 - 0) / sqrt(1*2*2*3) = 2/sqrt(12)
    # call B: labels 1 0 0 / preds 0 1 0: tp=0 fn=1 fp=1 tn=1
    #   F1 = 0; MCC = (0 - 1*1) / sqrt(1*1*2*2) = -1/2
    # pooled: tp=1 fn=2 fp=1 tn=3: P = 1/2, R = 1/3, F1 = 2/5; MCC = (3 - 2) / sqrt(2*3*4*5)
    calls = [([1, 1, 0, 0], [1, 0, 0, 0]), ([1, 0, 0], [0, 1, 0])]
    metrics = {
        (name, avg): mx.metric.create(name, average=avg)
        for name in ("f1", "mcc")
        for avg in ("macro", "micro")
    }
    for labels, preds in calls:
        # two pairs per call: the counts of one call are pooled before macro averaging
        half = len(labels) // 2
        lab = [nd.array(labels[:half]), nd.array(labels[half:])]
        prd = [_scores(preds[:half]), _scores(preds[half:])]
        for metric in metrics.values():
            metric.update(lab, prd)
    assert metrics["f1", "macro"].get()[1] == pytest.approx((2 / 3 + 0) / 2)
    assert metrics["f1", "micro"].get()[1] == pytest.approx(2 / 5)
    assert metrics["mcc", "macro"].get()[1] == pytest.approx((2 / math.sqrt(12) - 0.5) / 2)
    assert metrics["mcc", "micro"].get()[1] == pytest.approx(1 / math.sqrt(120))
    assert metrics["f1", "macro"].num_inst == 2  # one instance per call
    assert metrics["f1", "micro"].num_inst == 7  # one per example


def test_f1_mcc_empty_and_degenerate():
    f1, mcc = mx.metric.F1(), mx.metric.MCC(average="micro")
    assert math.isnan(f1.get()[1]) and math.isnan(mcc.get()[1])
    # every label and prediction negative: no positives at all, both scores are 0
    for metric in (f1, mcc):
        metric.update([nd.array([0, 0])], [nd.array([[0.9, 0.1], [0.8, 0.2]])])
        assert metric.get()[1] == 0.0


def test_f1_micro_local_and_global():
    f1 = mx.metric.F1(average="micro")
    f1.update([nd.array([1, 0])], [_scores([1, 0])])  # perfect: F1 = 1
    f1.reset_local()
    f1.update([nd.array([1, 1])], [_scores([1, 0])])  # tp=1 fn=1: F1 = 2/3
    assert f1.get()[1] == pytest.approx(2 / 3)
    # global: tp=2 fn=1 fp=0: P = 1, R = 2/3, F1 = 0.8
    assert f1.get_global()[1] == pytest.approx(0.8)
    f1.reset()
    assert math.isnan(f1.get_global()[1])


def test_f1_mcc_errors():
    with pytest.raises(MXNetError, match="average"):
        mx.metric.F1(average="weighted")
    with pytest.raises(MXNetError, match="average"):
        mx.metric.create("mcc", average="bogus")
    f1 = mx.metric.F1()
    with pytest.raises(MXNetError, match="binary"):
        f1.update([nd.array([0, 2])], [_scores([0, 1])])
    with pytest.raises(MXNetError, match="shape"):
        f1.update([nd.array([0, 1, 1])], [_scores([0, 1])])
    with pytest.raises(MXNetError, match="does not match"):
        f1.update([nd.array([0, 1])], [_scores([0, 1]), _scores([1, 0])])


# ----------------------------------------------------------------- perplexity
def test_perplexity_by_hand_with_ignore_label():
    probs = np.array([[0.5, 0.5], [0.25, 0.75], [0.9, 0.1]])
    labels = np.array([0, 1, -1])
    # the third label is ignored: exp((-log 0.5 - log 0.75) / 2) = sqrt(2 * 4/3)
    ppl = mx.metric.create("perplexity", -1)
    ppl.update([labels], [probs])
    assert ppl.num_inst == 2
    assert ppl.get() == ("perplexity", pytest.approx(math.sqrt(8 / 3)))
    # without ignore_label the -1 is out of range: class 0, as MXNet's pick clips it
    clipped = mx.metric.Perplexity(None)
    with pytest.warns(UserWarning, match="label -1 is out of range for 2 classes"):
        clipped.update([labels], [probs])
    want = math.exp(-(math.log(0.5) + math.log(0.75) + math.log(0.9)) / 3)
    assert clipped.get()[1] == pytest.approx(want)
    ppl = mx.metric.Perplexity(None)
    ppl.update([labels[:2]], [probs[:2]])
    assert ppl.get()[1] == pytest.approx(math.sqrt(8 / 3))


def test_perplexity_class_axis_and_global():
    probs = np.array([[[0.5, 0.5], [0.25, 0.75], [0.9, 0.1]]])  # (1, 3, 2)
    ppl = mx.metric.Perplexity(ignore_label=None, axis=1)  # classes on axis 1 of (1, 2, 3)
    ppl.update([np.array([[0, 1, 0]])], [probs.transpose(0, 2, 1)])
    # -log 0.5 - log 0.75 - log 0.9 over 3
    expected = math.exp(-(math.log(0.5) + math.log(0.75) + math.log(0.9)) / 3)
    assert ppl.get()[1] == pytest.approx(expected)
    ppl.reset_local()
    assert math.isnan(ppl.get()[1])
    assert ppl.get_global()[1] == pytest.approx(expected)


def test_perplexity_shape_mismatch():
    with pytest.raises(MXNetError, match="do not match"):
        mx.metric.Perplexity(-1).update([nd.array([0, 1, 1])], [nd.array([[0.5, 0.5]] * 2)])


# ----------------------------------------------------------------- Pearson correlation
def test_pearsonr_macro_and_micro_against_numpy():
    rng = np.random.default_rng(0)
    pairs = [(rng.normal(size=(4, 3)), rng.normal(size=(4, 3))) for _ in range(2)]
    pairs[1] = (pairs[1][0] + 5.0, pairs[1][0] * 2 + pairs[1][1] + 5.0)
    macro = mx.metric.create("pearsonr")
    micro = mx.metric.PearsonCorrelation(average="micro")
    for label, pred in pairs:
        macro.update([nd.array(label)], [nd.array(pred)])
        micro.update([label], [pred])
    per_pair = [np.corrcoef(p.ravel(), lab.ravel())[0, 1] for lab, p in pairs]
    assert macro.get()[1] == pytest.approx(np.mean(per_pair))
    pooled_pred = np.concatenate([p.ravel() for _, p in pairs])
    pooled_label = np.concatenate([lab.ravel() for lab, _ in pairs])
    assert micro.get()[1] == pytest.approx(np.corrcoef(pooled_pred, pooled_label)[0, 1])
    assert micro.get()[1] != pytest.approx(macro.get()[1])
    assert macro.num_inst == micro.num_inst == 2
    micro.reset_local()
    assert math.isnan(micro.get()[1])
    assert micro.get_global()[1] == pytest.approx(np.corrcoef(pooled_pred, pooled_label)[0, 1])


def test_pearsonr_errors():
    with pytest.raises(MXNetError, match="average"):
        mx.metric.PearsonCorrelation(average="median")
    with pytest.raises(MXNetError, match="Shape"):
        mx.metric.PearsonCorrelation().update([nd.array([1, 2, 3])], [nd.array([[1, 2, 3]])])


# ----------------------------------------------------------------- PCC
def _confusion_batch(cm):
    """Labels and one-hot predictions whose confusion matrix (rows: labels) is ``cm``."""
    labels, preds = [], []
    for i, row in enumerate(cm):
        for j, count in enumerate(row):
            labels += [i] * count
            preds += [j] * count
    return np.array(labels), np.eye(len(cm))[preds]


def test_pcc_three_classes_by_hand():
    # rows (labels): [3 1 0] [1 2 1] [0 1 4]; s = 13 samples, c = 9 correct,
    # label counts t = (4, 4, 5), prediction counts p = (4, 4, 5)
    # cov = c*s - sum t_k p_k = 117 - 57 = 60; var = s^2 - sum t_k^2 = 169 - 57 = 112 (both)
    # pcc = 60 / sqrt(112 * 112) = 15/28
    labels, preds = _confusion_batch([[3, 1, 0], [1, 2, 1], [0, 1, 4]])
    pcc = mx.metric.create("pcc")
    pcc.update([nd.array(labels)], [nd.array(preds)])
    assert pcc.get() == ("pcc", pytest.approx(15 / 28))
    # the same samples one at a time, classes growing as they appear, ids instead of scores
    pcc.reset()
    for label, pred in zip(labels, preds.argmax(axis=1), strict=True):
        pcc.update([np.array([label])], [np.array([pred])])
    assert pcc.get()[1] == pytest.approx(15 / 28)
    assert pcc.num_inst == len(labels)


def test_pcc_matches_mcc_for_two_classes():
    labels, preds = _confusion_batch([[7, 3], [2, 5]])
    pcc, mcc = mx.metric.PCC(), mx.metric.MCC()
    for metric in (pcc, mcc):
        metric.update([nd.array(labels)], [nd.array(preds)])
    # MCC = (7*5 - 3*2) / sqrt(10 * 8 * 9 * 7)
    assert pcc.get()[1] == pytest.approx(29 / math.sqrt(5040))
    assert mcc.get()[1] == pytest.approx(29 / math.sqrt(5040))


def test_pcc_degenerate_local_global_and_errors():
    pcc = mx.metric.PCC()
    assert math.isnan(pcc.get()[1])
    pcc.update([np.array([1, 1])], [np.array([0, 1])])  # one label class: undefined
    assert math.isnan(pcc.get()[1])
    pcc.reset_local()
    pcc.update([np.array([0, 1])], [np.array([0, 1])])  # perfect
    assert pcc.get()[1] == pytest.approx(1.0)
    # global rows (labels 1 1 0 1, preds 0 1 0 1): [1 0] [1 2]; s=4, c=3, t=(1,3), p=(2,2)
    # cov = 12 - (2 + 6) = 4; var_t = 16 - 10 = 6; var_p = 16 - 8 = 8: 4 / sqrt(48)
    assert pcc.get_global()[1] == pytest.approx(4 / math.sqrt(48))
    with pytest.raises(MXNetError, match="negative"):
        pcc.update([np.array([-1, 0])], [np.array([0, 1])])
    with pytest.raises(MXNetError, match="do not match"):
        pcc.update([np.array([0, 1])], [np.zeros((3, 2))])


# ----------------------------------------------------------------- configs and create
def _example(klass):
    """An instance of registered metric class ``klass`` with non-default arguments."""
    special = {
        "Accuracy": lambda: klass(axis=0, name="acc0"),
        "TopKAccuracy": lambda: klass(top_k=3),
        "CrossEntropy": lambda: klass(eps=1e-8),
        "F1": lambda: klass(average="micro"),
        "MCC": lambda: klass(average="micro"),
        "PearsonCorrelation": lambda: klass(average="micro"),
        "Perplexity": lambda: klass(-1, axis=1),
        "CompositeEvalMetric": lambda: klass(["acc", mx.metric.F1(average="micro")]),
        "CustomMetric": lambda: klass(np.mean, name="custom_mean", allow_extra_outputs=True),
    }
    return special.get(klass.__name__, klass)()


@pytest.mark.parametrize(
    "klass", sorted(set(_REGISTRY.values()), key=lambda k: k.__name__), ids=lambda k: k.__name__
)
def test_get_config_round_trip_every_registered_metric(klass):
    metric = _example(klass)
    config = metric.get_config()
    assert config["metric"] == klass.__name__
    assert {"name", "output_names", "label_names"} <= set(config)
    if klass is mx.metric.CustomMetric:  # a function does not go through JSON; the dict does
        rebuilt = mx.metric.create(config)
    else:
        rebuilt = mx.metric.create(json.dumps(config))
    assert type(rebuilt) is klass
    assert rebuilt.get_config() == config
    assert rebuilt.name == metric.name
    copy.deepcopy(rebuilt).reset()


def test_get_config_records_constructor_arguments():
    assert mx.metric.Accuracy(axis=0).get_config()["axis"] == 0
    assert mx.metric.F1().get_config()["average"] == "macro"
    config = mx.metric.create("perplexity", -1).get_config()
    assert (config["ignore_label"], config["axis"]) == (-1, -1)
    topk = mx.metric.create(json.dumps(mx.metric.TopKAccuracy(top_k=5).get_config()))
    assert topk.name == "top_k_accuracy_5"
    composite = mx.metric.create(json.dumps(mx.metric.create(["acc", "pcc"]).get_config()))
    assert composite.get()[0] == ["accuracy", "pcc"]


def test_create_config_errors():
    with pytest.raises(MXNetError, match="not valid JSON"):
        mx.metric.create("{not json")
    with pytest.raises(MXNetError, match="'metric'"):
        mx.metric.create({"name": "acc"})
    with pytest.raises(MXNetError, match="not registered"):
        mx.metric.create('{"metric": "NoSuchMetric"}')
