"""gluon.contrib.estimator: the fit/evaluate loop, its handlers and BatchProcessor.

The training run is compared with Apache MXNet 1.9.1 (same script, same start weights); the rest
checks files, stopping epochs, handler order, log lines and the errors for bad input.
"""

import io
import logging
import os

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import gluon, nd
from mxrs.gluon.contrib.estimator import (
    BatchBegin,
    BatchEnd,
    BatchProcessor,
    CheckpointHandler,
    EarlyStoppingHandler,
    EpochBegin,
    EpochEnd,
    Estimator,
    LoggingHandler,
    MetricHandler,
    TrainBegin,
    TrainEnd,
    ValidationHandler,
)

# Runs under mxrs (mx = mxrs) and MXNet 1.9.1 (mx = mxnet) alike.
SCRIPT = """
net = mx.gluon.nn.Dense(1, in_units=3)
net.initialize()
net.weight.set_data(mx.nd.array(inputs["w"]))
net.bias.set_data(mx.nd.array(inputs["b"]))
loader = lambda x, y: mx.gluon.data.DataLoader(
    mx.gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)), batch_size=4)
trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
est = mx.gluon.contrib.estimator.Estimator(
    net, loss=mx.gluon.loss.L2Loss(), train_metrics=mx.metric.MAE(), trainer=trainer,
    context=mx.cpu())
est.logger.handlers = []
est.fit(loader(inputs["x"], inputs["y"]), val_data=loader(inputs["vx"], inputs["vy"]), epochs=3)
result = {m.get()[0]: m.get()[1] for m in est.train_metrics + est.val_metrics}
arrays["w"] = net.weight.data().asnumpy()
arrays["b"] = net.bias.data().asnumpy()
"""


def _inputs():
    rng = np.random.default_rng(7)
    return {
        "w": rng.standard_normal((1, 3)).astype(np.float32),
        "b": np.zeros(1, np.float32),
        "x": rng.standard_normal((8, 3)).astype(np.float32),
        "y": rng.standard_normal((8, 1)).astype(np.float32),
        "vx": rng.standard_normal((4, 3)).astype(np.float32),
        "vy": rng.standard_normal((4, 1)).astype(np.float32),
    }


def _loader(x, y, batch_size=4):
    return gluon.data.DataLoader(
        gluon.data.ArrayDataset(nd.array(x), nd.array(y)), batch_size=batch_size
    )


def _estimator(lr=0.1, **kwargs):
    net = gluon.nn.Dense(1, in_units=3)
    net.initialize(mx.init.Constant(0.5))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    kwargs.setdefault("train_metrics", mx.metric.MAE())
    kwargs.setdefault("context", mx.cpu())
    est = Estimator(net, loss=gluon.loss.L2Loss(), trainer=trainer, **kwargs)
    est.logger.handlers = []
    return est


def _data():
    inputs = _inputs()
    return _loader(inputs["x"], inputs["y"]), _loader(inputs["vx"], inputs["vy"])


def test_fit_matches_mxnet(tmp_path):
    inputs = _inputs()
    want, want_arrays = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + SCRIPT, **inputs)
    scope = {"mx": mx, "inputs": inputs, "result": None, "arrays": {}}
    exec(SCRIPT, scope)  # the very script MXNet ran
    got = scope["result"]
    assert sorted(got) == sorted(want) == ["training mae", "validation mae"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, err_msg=name)
    for key in ("w", "b"):
        np.testing.assert_allclose(scope["arrays"][key], want_arrays[key], rtol=1e-5, atol=1e-6)


def test_fit_by_hand():
    """One batch of SGD on L2Loss: w -= lr * mean over the batch of (pred - y) * x."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = np.ones((4, 1), np.float32)
    est = _estimator(lr=0.5)
    est.fit(_loader(x, y), batches=1)
    pred = x @ np.full((3, 1), 0.5, np.float32)  # Constant(0.5) leaves the bias at 0
    grad_w = ((pred - y) * x).mean(axis=0)
    np.testing.assert_allclose(est.net.weight.data().asnumpy()[0], 0.5 - 0.5 * grad_w, rtol=1e-6)
    assert est.train_metrics[0].get() == ("training mae", pytest.approx(np.abs(pred - y).mean()))
    assert est.device == est.context == [mx.cpu()]


def test_default_metrics_and_trainer():
    net = gluon.nn.Dense(2, in_units=3)
    with pytest.warns(UserWarning, match="default SGD optimizer with learning rate 0.001"):
        est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss())
    assert [m.name for m in est.train_metrics] == [
        "training accuracy",
        "training softmaxcrossentropyloss",
    ]
    assert [m.name for m in est.val_metrics] == [
        "validation accuracy",
        "validation softmaxcrossentropyloss",
    ]
    assert est.trainer.learning_rate == 0.001
    assert isinstance(est.batch_processor, BatchProcessor)
    with pytest.warns(UserWarning, match="already fully initialized"):
        Estimator(net, gluon.loss.L2Loss(), initializer=mx.init.One(), trainer=est.trainer)


def test_checkpoint_files_and_resume(tmp_path):
    train, _ = _data()
    est = _estimator()
    ckpt = CheckpointHandler(str(tmp_path), model_prefix="m", max_checkpoints=2)
    est.fit(train, event_handlers=[ckpt], epochs=3)
    assert sorted(os.listdir(tmp_path)) == [
        "m-epoch1batch4.params",
        "m-epoch1batch4.states",
        "m-epoch2batch6.params",
        "m-epoch2batch6.states",
    ]
    saved = est.net.weight.data().asnumpy()

    est2 = _estimator()
    resume = CheckpointHandler(
        str(tmp_path), model_prefix="m", max_checkpoints=2, resume_from_checkpoint=True
    )
    est2.fit(train, event_handlers=[resume], epochs=4)
    assert est2.max_epoch == 1  # 3 of 4 epochs were done
    assert "m-epoch3batch8.params" in os.listdir(tmp_path)
    assert "m-epoch1batch4.params" not in os.listdir(tmp_path)  # over max_checkpoints
    # the resumed run continued from the saved weights: one more epoch from there
    est3 = _estimator()
    est3.net.weight.set_data(nd.array(saved))
    est3.net.bias.set_data(est.net.bias.data())
    est3.fit(train, epochs=1)
    np.testing.assert_allclose(
        est2.net.weight.data().asnumpy(), est3.net.weight.data().asnumpy(), rtol=1e-6
    )

    with pytest.raises(ValueError, match="maximum number of epoch 4 reached"):
        est2.fit(train, event_handlers=[resume], epochs=4)
    with pytest.raises(ValueError, match="same type of period"):
        est2.fit(train, event_handlers=[resume], batches=3)


def test_checkpoint_best_and_symbol(tmp_path):
    train, _ = _data()
    est = _estimator()
    est.net.hybridize()
    mae = est.train_metrics[0]
    ckpt = CheckpointHandler(
        str(tmp_path), monitor=mae, save_best=True, mode="min", batch_period=1, epoch_period=None
    )
    seen = []
    est.fit(train, event_handlers=[ckpt, _Watch(mae, seen)], batches=3)
    assert len(seen) == 3
    files = set(os.listdir(tmp_path))
    assert {"model-best.params", "model-best.states", "model-symbol.json"} <= files
    assert "model-epoch1batch2.params" in files
    assert ckpt.best == min(seen)


class _Watch(BatchEnd):
    """Records a metric's value at each batch end, after the metric handler, before priority 0."""

    def __init__(self, metric, seen):
        self.metric, self.seen, self.priority = metric, seen, -500

    def batch_end(self, estimator, *args, **kwargs):
        self.seen.append(self.metric.get()[1])
        return False


def test_early_stopping_epoch():
    train, _ = _data()
    est = _estimator(train_metrics=mx.metric.Loss("l2"))
    # the loss falls every epoch, so with mode='max' it stops improving after the first
    stop = EarlyStoppingHandler(monitor=est.train_metrics[0], mode="max", patience=1)
    out = io.StringIO()
    est.logger.addHandler(logging.StreamHandler(out))
    est.fit(train, event_handlers=[stop], epochs=10)
    assert (stop.stopped_epoch, stop.current_epoch) == (1, 2)
    assert "[Epoch 1] EarlyStoppingHanlder: early stopping due to training l2 not improving" in (
        out.getvalue()
    )
    # mode='min' with patience 2 runs to the end
    stop = EarlyStoppingHandler(monitor=est.train_metrics[0], mode="min", patience=2)
    est.fit(train, event_handlers=[stop], epochs=4)
    assert (stop.stopped_epoch, stop.current_epoch, stop.stop_training) == (0, 4, False)


class _Recorder(TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd):
    def __init__(self, tag, log, priority=0):
        self.tag, self.log, self.priority = tag, log, priority

    def train_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "train_begin"))

    def epoch_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "epoch_begin"))

    def batch_begin(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "batch_begin"))

    def batch_end(self, estimator, *args, **kwargs):
        count = estimator.train_metrics[0].num_inst
        self.log.append((self.tag, "batch_end", count))
        return False

    def epoch_end(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "epoch_end"))
        return False

    def train_end(self, estimator, *args, **kwargs):
        self.log.append((self.tag, "train_end"))


def test_handler_order_and_events():
    train, _ = _data()
    est = _estimator()
    log = []
    est.fit(train, event_handlers=[_Recorder("b", log, 5), _Recorder("a", log, -5000)], epochs=1)
    # priority order within each event; the metric handler (-1000) ran before b, after a
    assert log == [
        ("a", "train_begin"),
        ("b", "train_begin"),
        ("a", "epoch_begin"),
        ("b", "epoch_begin"),
        ("a", "batch_begin"),
        ("b", "batch_begin"),
        ("a", "batch_end", 0),
        ("b", "batch_end", 1),
        ("a", "batch_begin"),
        ("b", "batch_begin"),
        ("a", "batch_end", 1),
        ("b", "batch_end", 2),
        ("a", "epoch_end"),
        ("b", "epoch_end"),
        ("a", "train_end"),
        ("b", "train_end"),
    ]
    handlers = est._prepare_default_handlers(None, [_Recorder("c", [])])
    assert [type(h).__name__ for h in handlers] == [
        "GradientUpdateHandler",
        "MetricHandler",
        "_Recorder",  # priority 0, as StoppingHandler (none): the user's handlers come first
        "StoppingHandler",
        "LoggingHandler",
    ]


def test_batches_and_custom_batch_processor():
    calls = []

    class Counting(BatchProcessor):
        def fit_batch(self, estimator, train_batch, batch_axis=0):
            calls.append(train_batch[0].shape)
            return super().fit_batch(estimator, train_batch, batch_axis)

    train, val = _data()
    est = _estimator(batch_processor=Counting())
    est.fit(train, batches=3)
    assert calls == [(4, 3)] * 3
    log = []
    validation = ValidationHandler(val, est.evaluate, epoch_period=None, batch_period=2)
    rec = _Recorder("v", log)
    validation.event_handlers = [rec, MetricHandler(est.val_metrics)]
    est.fit(train, event_handlers=[validation], batches=4)
    assert log.count(("v", "epoch_begin")) == 2  # validated after batches 2 and 4


def test_logging_output():
    train, val = _data()
    est = _estimator()
    out = io.StringIO()
    est.logger.addHandler(logging.StreamHandler(out))
    est.fit(train, val_data=val, epochs=1)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Training begin: using optimizer SGD with current learning rate 0.1000 "
    assert lines[1] == "Train for 1 epochs."
    assert lines[2] == "[Epoch 0] Begin, current learning rate: 0.1000"
    assert lines[3] == "Validation Begin"
    assert lines[4].startswith("[Epoch 0] Finished in ")
    assert "validation mae: " in lines[4]
    assert lines[5].startswith("[Epoch 0] Finished in ") and "training mae: " in lines[5]
    assert lines[6].startswith("Train finished using total ") and "with 1 epochs." in lines[6]

    out.truncate(0)
    out.seek(0)
    est.fit(train, event_handlers=[LoggingHandler(1, est.train_metrics)], batches=2)
    lines = out.getvalue().splitlines()
    assert lines[2] == "[Epoch 0] Begin, current learning rate: 0.1000"
    assert lines[3].startswith("[Epoch 0][Batch 0][Samples 4] time/interval: ")
    assert lines[4].startswith("[Epoch 0][Batch 1][Samples 8] time/interval: ")


def test_bad_input():
    train, _ = _data()
    est = _estimator()
    net, trainer = est.net, est.trainer
    l2 = gluon.loss.L2Loss()
    with pytest.raises(ValueError, match="loss must be a Loss"):
        Estimator(net, loss="l2", trainer=trainer)
    with pytest.raises(ValueError, match="metrics must be a Metric or a list of Metric"):
        Estimator(net, l2, train_metrics=["mae"], trainer=trainer)
    with pytest.raises(ValueError, match="context must be a Context or a list of Context"):
        Estimator(net, l2, context="cpu", trainer=trainer)
    with pytest.raises(AssertionError, match="gpu\\(100\\) is not available"):
        Estimator(net, l2, context=[mx.gpu(100)], trainer=trainer)
    with pytest.raises(ValueError, match="Trainer must be a Gluon Trainer"):
        Estimator(net, l2, trainer="sgd")
    with pytest.raises(ValueError, match="fit_batch\\(\\) and evaluate_batch\\(\\)"):
        Estimator(net, l2, trainer=trainer, batch_processor=object())
    with pytest.raises(ValueError, match="only support input as Gluon DataLoader"):
        est.fit(nd.ones((4, 3)), epochs=1)
    with pytest.raises(ValueError, match="only support input as Gluon DataLoader"):
        est.evaluate([1, 2])
    with pytest.raises(ValueError, match="one and only one of: epochs or batches"):
        est.fit(train, epochs=1, batches=1)
    with pytest.raises(ValueError, match="one and only one of: epochs or batches"):
        est.fit(train)
    with pytest.raises(ValueError, match="handlers must be an EventHandler"):
        est.fit(train, event_handlers=[3], epochs=1)
    with pytest.raises(ValueError, match="refers to a metric instance"):
        est.fit(train, event_handlers=[MetricHandler(mx.metric.MAE())], epochs=1)
    with pytest.raises(ValueError, match="log_interval must be either an integer"):
        LoggingHandler(log_interval="batch")
    with pytest.raises(ValueError, match="provide one of the metric objects"):
        EarlyStoppingHandler(monitor="mae")
    with pytest.raises(ValueError, match="CompositeEvalMetric is not supported"):
        EarlyStoppingHandler(monitor=mx.metric.CompositeEvalMetric([mx.metric.MAE()]))
    with pytest.raises(ValueError, match="To save best model only"):
        CheckpointHandler("unused_dir_never_made", save_best=True)
    assert not os.path.exists("unused_dir_never_made")
    with pytest.warns(RuntimeWarning, match="mode middle is unknown"):
        with pytest.warns(UserWarning, match="`less` operator"):
            EarlyStoppingHandler(monitor=est.train_metrics[0], mode="middle")
