"""Training callbacks against Apache MXNet 1.9.1: the same batch-end calls, the same clock and
the same metrics give the same log lines (Speedometer, log_train_metric, ProgressBar,
LogValidationMetricsCallback); the checkpoint callbacks save on the epochs MXNet's do."""

import logging
import textwrap
import time

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import callback, checkpoint

# Run unchanged by both libraries: ``mx`` and ``callback`` are either's, ``clock`` is the fake
# ``time.time`` (the caller puts it in place); returns the messages logged, in order.
DRIVER = textwrap.dedent(
    """
    import logging
    import numpy as np

    class Clock:
        def __init__(self):
            self.now = 1000.0
        def __call__(self):
            return self.now

    def batches(mx, metric, epoch, n, clock, steps):
        for nbatch in range(n):
            if metric is not None:
                labels = np.array([nbatch % 3, 1, 0, 2], dtype=np.float32)
                preds = np.eye(3, dtype=np.float32)[[0, 1, nbatch % 3, 2]]
                metric.update([mx.nd.array(labels)], [mx.nd.array(preds)])
            clock.now += steps[nbatch % len(steps)]
            yield mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric,
                                         locals=None)

    def drive(mx, callback, clock):
        messages = []

        class Keep(logging.Handler):
            def emit(self, record):
                messages.append(record.getMessage())

        root = logging.getLogger()
        keep, level = Keep(), root.level
        root.addHandler(keep)
        root.setLevel(logging.INFO)
        try:
            both = lambda: mx.metric.create(["acc", "mse"])
            runs = [
                (callback.Speedometer(32, frequent=2), mx.metric.Accuracy(), [0.25, 0.5]),
                (callback.Speedometer(16, frequent=3, auto_reset=False), both(), [0.1, 0.3]),
                (callback.Speedometer(8, frequent=2), None, [0.2]),
                (callback.Speedometer(8, frequent=1), mx.metric.Accuracy(), [0.0]),
                (callback.log_train_metric(2), both(), [0.1]),
                (callback.log_train_metric(3, auto_reset=True), mx.metric.Accuracy(), [0.1]),
                (callback.ProgressBar(total=7, length=10), None, [0.1]),
                (callback.ProgressBar(total=3), None, [0.1]),
            ]
            for cb, metric, steps in runs:
                messages.append("--")
                for epoch, n in ((0, 8), (1, 5)):
                    for param in batches(mx, metric, epoch, n, clock, steps):
                        cb(param)
            messages.append("--")
            validation = callback.LogValidationMetricsCallback()
            metric = both()
            for param in batches(mx, metric, 3, 2, clock, [0.1]):
                validation(param)
            validation(mx.model.BatchEndParam(epoch=4, nbatch=0, eval_metric=None, locals=None))
        finally:
            root.removeHandler(keep)
            root.setLevel(level)
        return messages
    """
)


def _mxrs_messages(monkeypatch):
    namespace = {}
    exec(DRIVER, namespace)
    clock = namespace["Clock"]()
    monkeypatch.setattr(time, "time", clock)
    return namespace["drive"](mx, callback, clock)


def test_batch_end_callbacks_log_what_mxnet_logs(tmp_path, monkeypatch):
    script = DRIVER + textwrap.dedent(
        """
        import time
        import mxnet as mx
        clock = Clock()
        time.time = clock
        result = drive(mx, mx.callback, clock)
        """
    )
    expected, _ = mxnet_ref.run(tmp_path, script)
    got = _mxrs_messages(monkeypatch)
    assert got == expected
    # the cases the drive covers, by the lines MXNet writes for them
    for line in [
        "Epoch[0] Batch [2-4]\tSpeed: 85.33 samples/sec\taccuracy=0.750000",
        "Epoch[0] Batch [0-6]\tSpeed: 96.00 samples/sec\taccuracy=0.714286\tmse=1.297619",
        "Iter[0] Batch [4]\tSpeed: 40.00 samples/sec",
        "Epoch[0] Batch [1-2]\tSpeed: inf samples/sec\taccuracy=0.500000",
        "Iter[0] Batch[2] Train-mse=1.333333",
        "Iter[1] Batch[3] Train-accuracy=0.666667",
        "[====------] 43%\r",
        "Epoch[3] Validation-mse=1.125000",
    ]:
        assert line in got


def test_speedometer_counts_from_the_first_batch_of_each_epoch(monkeypatch, caplog):
    now = [0.0]
    monkeypatch.setattr(time, "time", lambda: now[0])
    metric = mx.metric.Accuracy()
    speedometer = callback.Speedometer(batch_size=10, frequent=2)
    caplog.set_level(logging.INFO)
    for epoch, nbatch, t in [
        (0, 0, 1.0),
        (0, 1, 2.0),
        (0, 2, 3.0),
        (0, 4, 5.0),
        (1, 0, 9.0),
        (1, 2, 13.0),
    ]:
        now[0] = t
        metric.update([mx.nd.array([1.0])], [mx.nd.array([[0.0, 1.0]])])
        speedometer(mx.model.BatchEndParam(epoch, nbatch, metric, None))
    # 20 samples in 2 s after the clock started at batch 0, 20 in 2 s, then a new epoch
    assert [r.getMessage() for r in caplog.records] == [
        "Epoch[0] Batch [0-2]\tSpeed: 10.00 samples/sec\taccuracy=1.000000",
        "Epoch[0] Batch [2-4]\tSpeed: 10.00 samples/sec\taccuracy=1.000000",
        "Epoch[1] Batch [0-2]\tSpeed: 5.00 samples/sec\taccuracy=1.000000",
    ]
    assert metric.num_inst == 0  # auto_reset cleared the local statistics


class _Param:
    """Any object with the four attributes serves as the batch-end parameter."""

    def __init__(self, epoch, nbatch, eval_metric):
        self.epoch, self.nbatch, self.eval_metric, self.locals = epoch, nbatch, eval_metric, {}


def test_log_train_metric_without_auto_reset_keeps_the_metric(caplog):
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([0.0, 1.0])], [mx.nd.array([[1.0, 0.0], [1.0, 0.0]])])
    cb = callback.log_train_metric(period=2)
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):
            cb(_Param(7, nbatch, metric))
        cb(_Param(7, 2, None))
    assert [r.getMessage() for r in caplog.records] == [
        f"Iter[7] Batch[{n}] Train-accuracy=0.500000" for n in (0, 2, 4)
    ]
    assert metric.num_inst == 2


def test_do_checkpoint_saves_every_period_epochs(tmp_path, caplog):
    prefix = str(tmp_path / "mlp")
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    arg = {"fc_weight": mx.nd.array(np.arange(6.0).reshape(2, 3)), "fc_bias": mx.nd.zeros((2,))}
    cb = callback.do_checkpoint(prefix, period=2)
    with caplog.at_level(logging.INFO):
        for iter_no in range(5):
            cb(iter_no, net, arg, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "mlp-0002.params",
        "mlp-0004.params",
        "mlp-symbol.json",
    ]
    assert [r.getMessage() for r in caplog.records] == [
        f'Saved checkpoint to "{prefix}-000{n}.params"' for n in (2, 4)
    ]
    sym, got_arg, got_aux = checkpoint.load_checkpoint(prefix, 4)
    assert sym.tojson() == net.tojson() and got_aux == {}
    np.testing.assert_array_equal(got_arg["fc_weight"].asnumpy(), np.arange(6.0).reshape(2, 3))
    # a period below 1 saves every epoch
    every = callback.do_checkpoint(str(tmp_path / "each"), period=0)
    every(0, None, arg, {})
    assert (tmp_path / "each-0001.params").exists()


def test_module_checkpoint_asks_the_module_to_save(tmp_path):
    calls = []

    class Module:
        def save_checkpoint(self, prefix, epoch, save_optimizer_states=False):
            calls.append((prefix, epoch, save_optimizer_states))

    cb = callback.module_checkpoint(Module(), "m", period=3, save_optimizer_states=True)
    for iter_no in range(7):
        cb(iter_no)
    assert calls == [("m", 3, True), ("m", 6, True)]


@pytest.mark.parametrize(
    "count, bar", [(0, "[----------] 0%\r"), (5, "[=====-----] 50%\r"), (10, "[==========] 100%\r")]
)
def test_progress_bar(caplog, count, bar):
    with caplog.at_level(logging.INFO):
        callback.ProgressBar(total=10, length=10)(_Param(0, count, None))
    assert [r.getMessage() for r in caplog.records] == [bar]
