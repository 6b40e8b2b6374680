"""``Monitor`` against Apache MXNet 1.9.1 on a real executor: the same batches are recorded
(every ``interval``-th), the same names pass the pattern, in the same order or sorted, with the
same statistics, and ``toc_print`` logs the same lines."""

import logging
import textwrap

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import monitor
from mxrs.base import MXNetError

# Run unchanged by both libraries (``mx`` and ``Monitor`` are either's).
DRIVER = textwrap.dedent(
    """
    import logging
    import numpy as np

    def net(mx):
        data = mx.sym.Variable("data")
        fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc1")
        bn = mx.sym.BatchNorm(fc, fix_gamma=False, name="bn1")
        act = mx.sym.Activation(bn, act_type="relu", name="relu1")
        fc2 = mx.sym.FullyConnected(act, num_hidden=2, name="fc2")
        return mx.sym.SoftmaxOutput(fc2, name="softmax")

    def bound(mx):
        exe = net(mx).simple_bind(mx.cpu(), data=(2, 4), softmax_label=(2,))
        for i, name in enumerate(sorted(exe.arg_dict)):
            v = exe.arg_dict[name]
            v[:] = np.arange(v.size).reshape(v.shape) * 0.1 - 0.3 + i
        for name, v in exe.aux_dict.items():
            v[:] = np.linspace(0.5, 1.5, v.size)
        return exe

    def drive(mx, Monitor, batches, **kwargs):
        exe = bound(mx)
        mon = Monitor(**kwargs)
        mon.install(exe)
        out = []
        for step in range(batches):
            mon.tic()
            exe.forward(is_train=False)
            out.append(mon.toc())
        return out

    def printed(mx, Monitor):
        messages = []

        class Keep(logging.Handler):
            def emit(self, record):
                messages.append(record.getMessage())

        root = logging.getLogger()
        keep, level = Keep(), root.level
        root.addHandler(keep)
        root.setLevel(logging.INFO)
        try:
            exe = bound(mx)
            mon = Monitor(1, stat_func=lambda x: mx.nd.array([x.size]), pattern=".*output|fc",
                          sort=True)
            mon.install(exe)
            for step in range(2):
                mon.tic()
                exe.forward(is_train=False)
                mon.toc_print()
        finally:
            root.removeHandler(keep)
            root.setLevel(level)
        return messages

    # (batches, Monitor keyword arguments); BatchNorm's hidden mean/var outputs, which MXNet
    # reports and mxrs's executor does not, match none of these patterns
    CASES = [
        (5, dict(interval=2, pattern=".*weight|.*output|.*moving.*|data", sort=True)),
        (3, dict(interval=1, pattern=".*weight|.*output|.*_bias")),
        (4, dict(interval=3, pattern="fc2")),
    ]
    """
)


@pytest.fixture(scope="module")
def mxnet_results(tmp_path_factory):
    script = DRIVER + textwrap.dedent(
        """
        import mxnet as mx
        result = {"cases": [drive(mx, mx.mon.Monitor, n, **kw) for n, kw in CASES],
                  "printed": printed(mx, mx.mon.Monitor)}
        """
    )
    result, _ = mxnet_ref.run(tmp_path_factory.mktemp("monitor"), script)
    return result


def _driver():
    namespace = {}
    exec(DRIVER, namespace)
    return namespace


@pytest.mark.parametrize("case", range(3))
def test_toc_records_what_mxnet_records(mxnet_results, case):
    ns = _driver()
    batches, kwargs = ns["CASES"][case]
    got = ns["drive"](mx, monitor.Monitor, batches, **kwargs)
    want = mxnet_results["cases"][case]
    assert [[(s, n) for s, n, _ in b] for b in got] == [[(s, n) for s, n, _ in b] for b in want]
    assert any(got), "some batch is recorded"
    for got_batch, want_batch in zip(got, want, strict=True):
        for (_, name, g), (_, _, w) in zip(got_batch, want_batch, strict=True):
            assert g.endswith("\t") and g.count("\t") == 1, name
            np.testing.assert_allclose(float(g), float(w), rtol=1e-6, err_msg=name)


def test_toc_print_logs_mxnets_lines(mxnet_results):
    got = _driver()["printed"](mx, monitor.Monitor)
    assert got == mxnet_results["printed"]
    assert "Batch:       1 fc1_output                     6.0\t" in got


def test_default_statistic_is_the_root_mean_square():
    exe = _driver()["bound"](mx)
    mon = monitor.Monitor(1, pattern="fc1_weight$")
    mon.install(exe)
    mon.tic()
    exe.forward()
    [(step, name, stat)] = mon.toc()
    w = exe.arg_dict["fc1_weight"].asnumpy()
    assert (step, name) == (1, "fc1_weight")
    np.testing.assert_allclose(float(stat), np.sqrt(np.mean(w**2)), rtol=1e-6)


def test_statistics_may_be_lists_and_arrays():
    exe = _driver()["bound"](mx)
    mon = monitor.Monitor(
        1, stat_func=lambda x: [mx.nd.max(x), mx.nd.zeros((2,))], pattern="softmax_label"
    )
    mon.install(exe)
    mon.tic()
    exe.forward()
    label_max = float(exe.arg_dict["softmax_label"].asnumpy().max())
    assert mon.toc() == [(1, "softmax_label", f"{np.float32(label_max)!s}\t[0. 0.]\t")]
    assert mon.toc() == []  # nothing until the next tic


def test_one_monitor_serves_several_executors_and_passes_monitor_all():
    calls = []

    class Spy:
        def __init__(self, exe):
            self.exe = exe
            self._symbol = exe._symbol
            self.arg_arrays, self.aux_arrays = exe.arg_arrays, exe.aux_arrays

        def set_monitor_callback(self, callback, monitor_all=False):
            calls.append(monitor_all)
            self.exe.set_monitor_callback(callback, monitor_all)

    ns = _driver()
    exes = [Spy(ns["bound"](mx)), Spy(ns["bound"](mx))]
    mon = monitor.Monitor(1, pattern="relu1_output|fc2_bias", monitor_all=True)
    for exe in exes:
        mon.install(exe)
    assert calls == [True, True]
    mon.tic()
    for exe in exes:
        exe.exe.forward()
    names = [name for _, name, _ in mon.toc()]
    assert names == ["relu1_output", "relu1_output", "fc2_bias", "fc2_bias"]


def test_bad_arguments_are_errors():
    with pytest.raises(MXNetError, match="interval"):
        monitor.Monitor(0)
    with pytest.raises(MXNetError, match="pattern '\\(' is not a regular expression"):
        monitor.Monitor(1, pattern="(")
    exe = _driver()["bound"](mx)
    mon = monitor.Monitor(1, stat_func=lambda x: 1.5, pattern="data")
    mon.install(exe)
    mon.tic()
    with pytest.raises(MXNetError, match="stat_func must return an NDArray.*float.*'data'"):
        mon.toc()


def test_toc_print_logs_at_info(caplog):
    exe = _driver()["bound"](mx)
    mon = monitor.Monitor(1, stat_func=lambda x: mx.nd.array([x.size]), pattern="fc2_weight")
    mon.install(exe)
    mon.tic()
    exe.forward()
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "Batch:       1 fc2_weight                     6.0\t")
    ]
