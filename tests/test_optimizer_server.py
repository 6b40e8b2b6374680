"""The optimizers' side on the parameter servers: the spec a worker sends (name and numbers,
never a pickle), which optimizers are refused, and the servers' updates agreeing with Python's.
"""

import subprocess
import sys
import textwrap

import mxrs as mx
import pytest
from jobs import TIMEOUT, node_env, scheduler_and_servers
from mxrs.base import MXNetError
from test_optimizer import FULL, GRADS, W0

# ----------------------------------------------------------------- server spec
COMMON = [
    ("learning_rate", 0.1),
    ("wd", 0.05),
    ("rescale_grad", 0.5),
    ("clip_gradient", 0.6),
    ("begin_num_update", 0.0),
    ("multi_precision", 0.0),
]


def test_to_spec_names_and_values():
    assert mx.optimizer.SGD().to_spec() == (
        "sgd",
        [
            ("learning_rate", 0.01),
            ("wd", 0.0),
            ("rescale_grad", 1.0),
            ("begin_num_update", 0.0),
            ("multi_precision", 0.0),
            ("momentum", 0.0),
            ("lazy_update", 1.0),
        ],
    )
    cases = [
        (
            mx.optimizer.SGD(momentum=0.9, lazy_update=False, **FULL),
            "sgd",
            [("momentum", 0.9), ("lazy_update", 0.0)],
        ),
        (mx.optimizer.NAG(momentum=0.8, **FULL), "nag", [("momentum", 0.8)]),
        (
            mx.optimizer.Adam(beta1=0.8, beta2=0.99, epsilon=1e-3, **FULL),
            "adam",
            [("beta1", 0.8), ("beta2", 0.99), ("epsilon", 1e-3), ("lazy_update", 1.0)],
        ),
        (mx.optimizer.AdaGrad(eps=1e-3, **FULL), "adagrad", [("eps", 1e-3)]),
        (
            mx.optimizer.RMSProp(
                gamma1=0.8, gamma2=0.7, epsilon=1e-3, centered=True, clip_weights=2.0, **FULL
            ),
            "rmsprop",
            [
                ("gamma1", 0.8),
                ("gamma2", 0.7),
                ("epsilon", 1e-3),
                ("centered", 1.0),
                ("clip_weights", 2.0),
            ],
        ),
        (
            mx.optimizer.Signum(momentum=0.5, wd_lh=0.02, **FULL),
            "signum",
            [("momentum", 0.5), ("wd_lh", 0.02)],
        ),
        (
            mx.optimizer.Adamax(beta1=0.8, beta2=0.5, **FULL),
            "adamax",
            [("beta1", 0.8), ("beta2", 0.5)],
        ),
        (
            mx.optimizer.AdaDelta(rho=0.8, epsilon=1e-3, **FULL),
            "adadelta",
            [("rho", 0.8), ("epsilon", 1e-3)],
        ),
        (
            mx.optimizer.FTML(beta1=0.7, beta2=0.99, epsilon=1e-3, **FULL),
            "ftml",
            [("beta1", 0.7), ("beta2", 0.99), ("epsilon", 1e-3)],
        ),
    ]
    for opt, name, own in cases:
        got_name, params = opt.to_spec()
        assert (got_name, params) == (name, COMMON + own)
        assert all(type(v) is float for _, v in params)
    _, params = mx.optimizer.RMSProp().to_spec()
    assert "clip_weights" not in dict(params) and dict(params)["centered"] == 0.0
    _, params = mx.optimizer.Adam(multi_precision=True, begin_num_update=7).to_spec()
    assert dict(params)["multi_precision"] == 1.0 and dict(params)["begin_num_update"] == 7.0
    # Defaults travel too, so the servers never fall back on their own.
    assert dict(mx.optimizer.Adamax().to_spec()[1])["learning_rate"] == 0.002
    assert dict(mx.optimizer.AdaDelta().to_spec()[1])["epsilon"] == 1e-5
    assert dict(mx.optimizer.FTML().to_spec()[1])["beta1"] == 0.6


def test_to_spec_reports_the_current_learning_rate():
    opt = mx.optimizer.SGD(learning_rate=0.2)
    opt.set_learning_rate(0.05)
    assert dict(opt.to_spec()[1])["learning_rate"] == 0.05
    sched = mx.lr_scheduler.MultiFactorScheduler([2], factor=0.1, base_lr=1.0)
    opt = mx.optimizer.SGD(lr_scheduler=sched)
    assert dict(opt.to_spec()[1])["learning_rate"] == 1.0
    for _ in range(3):
        opt._update_count(0)
    assert dict(opt.to_spec()[1])["learning_rate"] == pytest.approx(0.1)


def test_ftrl_runs_only_on_workers():
    with pytest.raises(MXNetError, match=r"FTRL runs only on workers.*update_on_kvstore=False"):
        mx.optimizer.FTRL().to_spec()


def test_nadam_runs_only_on_workers():
    # Its momentum schedule is one running product shared by all keys.
    with pytest.raises(MXNetError, match="Nadam cannot run on the parameter servers"):
        mx.optimizer.Nadam().to_spec()


def test_subclasses_of_server_optimizers_are_not_sent_to_servers():
    class MySGD(mx.optimizer.SGD):
        pass

    with pytest.raises(MXNetError, match="MySGD cannot run on the parameter servers"):
        MySGD().to_spec()


def test_multiplier_lookups_for_servers():
    opt = mx.optimizer.SGD(param_idx2name={3: "dense0_bias"})
    opt.set_lr_mult({3: 0.1})
    assert (opt._get_lr_mult(3), opt._get_wd_mult(3)) == (0.1, 0.0)
    assert (opt._get_lr_mult(9), opt._get_wd_mult(9)) == (1.0, 1.0)


# ----------------------------------------------------------------- Python and the servers agree
SERVER_CHECK = textwrap.dedent(
    """
    import numpy as np
    import mxrs as mx
    from mxrs import _native, nd

    W0 = np.array({w0}, dtype=np.float32)
    GRADS = np.array({grads}, dtype=np.float32)
    FULL = dict(learning_rate=0.1, wd=0.05, rescale_grad=0.5, clip_gradient=0.6)
    CASES = [
        mx.optimizer.SGD(), mx.optimizer.SGD(momentum=0.9, **FULL),
        mx.optimizer.NAG(momentum=0.8, **FULL), mx.optimizer.NAG(**FULL),
        mx.optimizer.Adam(), mx.optimizer.Adam(beta1=0.8, beta2=0.99, epsilon=1e-3, **FULL),
        mx.optimizer.AdaGrad(eps=1e-3, **FULL),
        mx.optimizer.AdaGrad(learning_rate=0.1, wd=0.05, clip_gradient=0.0),
        mx.optimizer.RMSProp(gamma1=0.8, epsilon=1e-3, clip_weights=2.05, **FULL),
        mx.optimizer.RMSProp(centered=True, gamma2=0.7, **FULL),
        mx.optimizer.Signum(momentum=0.5, wd_lh=0.02, **FULL),
        mx.optimizer.Signum(momentum=0.0, wd=0.05, learning_rate=0.1),
        mx.optimizer.SGD(momentum=0.9, begin_num_update=4, **FULL),
        mx.optimizer.SGD(momentum=0.9, learning_rate=0.1, rescale_grad=0.5),
        mx.optimizer.Adamax(), mx.optimizer.Adamax(beta1=0.8, beta2=0.5, **FULL),
        mx.optimizer.Adamax(beta1=0.0, learning_rate=0.05, wd=0.1, begin_num_update=3),
        mx.optimizer.AdaDelta(), mx.optimizer.AdaDelta(rho=0.8, epsilon=1e-3, **FULL),
        mx.optimizer.AdaDelta(rho=0.5, epsilon=0.25, wd=0.01, clip_gradient=0.0),
        mx.optimizer.FTML(), mx.optimizer.FTML(beta1=0.7, beta2=0.99, epsilon=1e-3, **FULL),
        mx.optimizer.FTML(beta2=0.5, learning_rate=0.02, wd=0.01, begin_num_update=5),
    ]
    w = _native.Worker("sync")
    for key, opt in enumerate(CASES):
        opt.set_lr_mult({{key: 0.5}})
        opt.set_wd_mult({{key: 2.0}})
        mults = [(key, opt._get_lr_mult(key), opt._get_wd_mult(key))]
        w.set_optimizer(*opt.to_spec(), mults)
        w.init([key], [W0.copy()]).wait()
        out = np.empty_like(W0)
        local = nd.array(W0)
        state = opt.create_state(key, local)
        for g in GRADS:
            w.pushpull([key], [g], [out]).wait()
            opt.update(key, local, nd.array(g), state)
        np.testing.assert_allclose(out, local.asnumpy(), rtol=2e-6, atol=1e-7,
                                   err_msg=repr(opt.to_spec()))
    # FTML divides by the learning rate; the servers leave a key with lr_mult 0 unchanged.
    key = len(CASES)
    opt = mx.optimizer.FTML(**FULL)
    w.set_optimizer(*opt.to_spec(), [(key, 0.0, 1.0)])
    w.init([key], [W0.copy()]).wait()
    out = np.empty_like(W0)
    for g in GRADS:
        w.pushpull([key], [g], [out]).wait()
    np.testing.assert_array_equal(out, W0)
    w.finish()
    print("agreed", len(CASES), flush=True)
    """
)


def test_python_and_the_servers_compute_the_same_updates():
    with scheduler_and_servers(workers=1, servers=1, PS_HEARTBEAT_TIMEOUT=5) as port:
        script = SERVER_CHECK.format(w0=W0.tolist(), grads=GRADS.tolist())
        done = subprocess.run(
            [sys.executable, "-c", script],
            env=node_env("worker", port, workers=1, servers=1),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["agreed", "23"]
