"""Errors of computation surface at the next wait, as MXNet 1.9.1's asynchronous engine raises them.

An operator's error met while computing (a sampler's parameter out of range) does not raise at
the call: its outputs are failed arrays, which raise it at ``wait_to_read``, ``asnumpy``,
``nd.waitall()`` or in repr, once; an operator reading a failed array fails its outputs with the
same error, and a write into (or from) a failed array fails the target. Argument errors still
raise at the call. An error nobody read is reported when the process exits, with status 1.
"""

import subprocess
import sys
import textwrap

import mxrs as mx
import numpy as np
import pytest
from mxnet_ref import run
from mxrs import _failure
from mxrs.base import MXNetError
from mxrs.ndarray.core.op import Op, apply
from mxrs.ndarray.random_sample import DistributionError

BAD = "normal: scale must be positive"


@pytest.fixture(autouse=True)
def _nothing_left_over():
    """Each test starts and ends with no failure unreported (a left-over one would make the
    samplers of later tests fail, as MXNet's shared random resource does)."""
    _failure.unreported()
    yield
    assert _failure.unreported() == []


def bad(shape=(2, 2)):
    return mx.nd.random.normal(0, -1, shape)


def test_the_call_returns_and_the_array_knows_its_shape_dtype_and_context():
    a = mx.nd.random.normal(0, -1, (3, 2), dtype="float64", ctx=mx.cpu(1))
    assert isinstance(a, mx.nd.NDArray)
    assert (a.shape, a.dtype, a.context, a.size, a.ndim, len(a)) == (
        (3, 2), np.float64, mx.cpu(1), 6, 2, 3)  # fmt: skip
    with pytest.raises(DistributionError, match=BAD) as info:
        a.asnumpy()
    assert isinstance(info.value, MXNetError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("wait", ["wait_to_read", "asnumpy", "repr", "asscalar", "waitall"])
def test_each_wait_raises_the_error_once(wait):
    a = bad((1,))
    look = {
        "wait_to_read": a.wait_to_read,
        "asnumpy": a.asnumpy,
        "repr": lambda: repr(a),
        "asscalar": a.asscalar,
        "waitall": mx.nd.waitall,
    }[wait]
    with pytest.raises(MXNetError, match=BAD):
        look()
    look()  # reported: not again, as in MXNet
    mx.nd.waitall()
    assert a.asnumpy().shape == (1,)  # its data is now a placeholder


def test_an_op_reading_a_failed_array_fails_with_the_same_error():
    a = mx.nd.ones((2, 2))
    b = bad()
    c = mx.nd.dot(a, b) + 1
    d = mx.nd.relu(c).reshape((4,)).astype("float64")
    assert d.shape == (4,) and d.dtype == np.float64
    with pytest.raises(DistributionError, match=BAD):
        d.asnumpy()
    # one failure, shared by every array it reached: read once, it is gone from all of them
    b.asnumpy()
    c.asnumpy()
    mx.nd.waitall()


def test_copies_rows_and_slices_of_a_failed_array_fail_with_it():
    a, b = bad().copyto(mx.cpu())
    assert (a.shape, b.shape) == ((2,), (2,))
    with pytest.raises(MXNetError, match=BAD):
        a.asnumpy()
    b.asnumpy()  # a and b share the failure, as MXNet's rows share their array's
    c = bad()[0:1].as_in_context(mx.cpu(1)).copy()
    assert (c.shape, c.context) == ((1, 2), mx.cpu(1))
    with pytest.raises(MXNetError, match=BAD):
        c.wait_to_read()


def test_writing_into_a_failed_array_leaves_it_failed_and_a_failed_value_fails_its_target():
    a = bad()
    a[:] = 1
    with pytest.raises(MXNetError, match=BAD):
        a.asnumpy()
    a[:] = 1
    np.testing.assert_array_equal(a.asnumpy(), np.ones((2, 2)))  # reported: writable again
    for write in (
        lambda z, b: z.__setitem__(slice(None), b),
        lambda z, b: z.__setitem__(0, b[0]),
        lambda z, b: b.copyto(z),
        lambda z, b: mx.nd.dot(b, b, out=z),
        lambda z, b: mx.nd.random.normal(0, -1, out=z),
    ):
        z = mx.nd.zeros((2, 2))
        write(z, bad())
        with pytest.raises(MXNetError, match=BAD):
            z.asnumpy()


def test_waitall_raises_the_oldest_error_once_and_counts_the_others():
    first = bad()
    with pytest.raises(MXNetError, match=BAD + r", got -1.0$"):
        mx.nd.waitall()
    first.asnumpy()  # reported: reading it does not raise
    first = bad()
    second = apply(_Checked, (-mx.nd.ones(2),))  # a failure of its own
    with pytest.raises(MXNetError, match=BAD + r".* \(and 1 more computation\(s\) failed\)"):
        mx.nd.waitall()
    mx.nd.waitall()  # a second waitall does not raise again
    for arr in (first, second):  # nor does reading the arrays afterwards
        arr.asnumpy()


def test_an_error_lives_until_waitall_when_its_arrays_are_gone():
    bad()
    with pytest.raises(MXNetError, match=BAD):
        mx.nd.waitall()


def test_samplers_after_a_failed_one_fail_with_its_error_until_it_is_reported():
    bad()
    later = [mx.nd.random.uniform(0, 1, (2,)), mx.nd.random.randint(0, 5, (3,), ctx=mx.cpu(2)),
             mx.nd.Dropout(mx.nd.ones(4), p=0.5, mode="always")]  # fmt: skip
    with pytest.raises(MXNetError, match=BAD):
        later[1].asnumpy()  # the first sampler's error: they share its device's generator
    for arr in later:
        arr.asnumpy()  # reported for all of them
    mx.random.seed(5)
    x = mx.nd.random.uniform(0, 1, (3,)).asnumpy()
    bad()
    mx.random.seed(5)  # the device stays failed, seeded anew
    with pytest.raises(MXNetError, match=BAD):
        mx.nd.random.uniform(0, 1, (3,)).asnumpy()
    np.testing.assert_array_equal(mx.nd.random.uniform(0, 1, (3,)).asnumpy(), x)
    # shuffle and multinomial do not use that shared resource: they draw on
    bad()
    assert mx.nd.random.shuffle(mx.nd.arange(3)).asnumpy().sum() == 3
    assert mx.nd.random.multinomial(mx.nd.array([0.0, 1.0])).asnumpy()[0] == 1
    with pytest.raises(MXNetError, match=BAD):
        mx.nd.waitall()


@pytest.mark.parametrize(
    ("draw", "said"),
    [
        (lambda: mx.nd.random.uniform(1, 0, (2,)), "low must not exceed high"),
        (lambda: mx.nd.random.randn(2, loc=0, scale=-2), BAD),
        (lambda: mx.nd.random.normal(0, 0, (2,)), BAD),
        (lambda: mx.nd.random.randint(3, 3, (2,)), "low must be less than high"),
        (lambda: mx.nd.random.poisson(-1, (2,)), "lam must be 0 or more"),
        (lambda: mx.nd.random.exponential(-1, (2,)), "scale must be positive"),
        (lambda: mx.nd.random_exponential(lam=0, shape=(2,)), "lam must be positive"),
        (lambda: mx.nd.random.exponential_like(mx.nd.ones(2), lam=-1), "lam must be positive"),
        (lambda: mx.nd.random.gamma(1, -1, (2,)), "beta must be positive"),
        (lambda: mx.nd.random.negative_binomial(2, 1.5, (2,)), r"p must be in \(0, 1\]"),
        (lambda: mx.nd.random.generalized_negative_binomial(-1, 1, (2,)), "mu must be positive"),
        (lambda: mx.nd.random.normal_like(mx.nd.ones(2), scale=-1), BAD),
        (lambda: mx.nd.sample_normal(mx.nd.zeros(2), -mx.nd.ones(2)), "sigma must be non-neg"),
        (lambda: mx.nd.random.multinomial(mx.nd.array([-0.5, 1.5])), "non-negative"),
    ],
)
def test_parameters_out_of_range_raise_where_the_draws_are_read(draw, said):
    out = draw()
    assert isinstance(out, mx.nd.NDArray)
    with pytest.raises(DistributionError, match=said):
        out.asnumpy()


def test_argument_errors_raise_at_the_call():
    one, two = mx.nd.ones(2), mx.nd.ones(3)
    for call in (
        lambda: mx.nd.random.normal(one, 1.0),  # numbers mixed with arrays
        lambda: mx.nd.random.exponential(0.0),  # an infinite rate
        lambda: mx.nd.sample_uniform(one, two),  # parameter shapes differ
        lambda: mx.nd.sample_uniform(one, one, dtype="int32"),
        lambda: mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3))),
        lambda: mx.nd.ones((2,)) + mx.nd.ones((3,)),
        lambda: mx.sym.dot(mx.sym.var("a"), mx.sym.var("b")).bind(
            mx.cpu(), {"a": mx.nd.ones((2, 3)), "b": mx.nd.ones((2, 3))}).forward(),
    ):  # fmt: skip
        with pytest.raises(MXNetError):
            call()
    # a failed array in an argument error: the argument error, at once
    with pytest.raises(MXNetError, match="shapes"):
        mx.nd.dot(bad((2, 3)), bad((2, 3)))
    with pytest.raises(MXNetError, match=BAD):
        mx.nd.waitall()


def test_autograd_records_failed_arrays_and_fails_the_gradients():
    x = mx.nd.ones((2,))
    w = mx.nd.ones((2,))
    x.attach_grad()
    w.attach_grad()
    with mx.autograd.record():
        y = (x * bad((2,)) + x * w).sum()
    y.backward()  # does not raise
    with pytest.raises(MXNetError, match=BAD):
        x.grad.asnumpy()
    w.grad.asnumpy()  # one failure: reported
    with mx.autograd.record():
        y = x * bad((2,))
    gx = mx.autograd.grad(y, [x])[0]
    assert gx.shape == (2,)
    with pytest.raises(MXNetError, match=BAD):
        gx.asnumpy()
    # a failure already reported gives no gradient and raises nothing
    with mx.autograd.record():
        y = (x * bad((2,))).sum()
    with pytest.raises(MXNetError, match=BAD):
        y.asnumpy()
    y.backward()


def test_an_executor_fails_its_outputs_and_gradients_and_raises_at_the_wait():
    data, noise = mx.sym.var("data"), mx.sym.random.normal(0, -1, (2, 2))
    out = mx.sym.make_loss(mx.sym.dot(data, noise))
    args = {"data": mx.nd.ones((3, 2))}
    grads = {"data": mx.nd.zeros((3, 2))}
    exe = out.bind(mx.cpu(), args=args, args_grad=grads)
    (res,) = exe.forward(is_train=True)
    assert res.shape == (3, 2)
    exe.backward()
    with pytest.raises(MXNetError, match=BAD):
        exe.grad_dict["data"].asnumpy()
    exe.forward()
    with pytest.raises(MXNetError, match=BAD):
        mx.nd.waitall()


def test_a_gluon_block_given_a_failed_batch_fails_its_output():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(4, activation="tanh"), mx.gluon.nn.Dropout(0.5))
    net.initialize()
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        with mx.autograd.record():
            z = net(mx.nd.random.normal(10, -10, (3, 5)))
        assert z.shape == (3, 4)
        with pytest.raises(MXNetError, match="scale must be positive"):
            z.wait_to_read()


class _Checked(Op):
    """An op whose computation refuses negative values, as an operator with a data check."""

    def forward(self, x):
        if (x < 0).any():
            raise _failure.ComputeError("checked: negative value", result=self.xp.zeros_like(x))
        return x * 2

    def backward(self, g):
        return g * 2


def test_apply_fails_the_outputs_of_an_op_whose_forward_raises():
    ok = apply(_Checked, (mx.nd.ones(2),))
    np.testing.assert_array_equal(ok.asnumpy(), [2, 2])
    x = mx.nd.array([1.0, -1.0])
    x.attach_grad()
    with mx.autograd.record():
        y = apply(_Checked, (x,))
    assert y.shape == (2,)
    y.backward()
    with pytest.raises(MXNetError, match="checked: negative value"):
        x.grad.asnumpy()


def test_an_error_without_placeholder_outputs_raises_at_once():
    class _Plain(Op):
        def forward(self, x):
            raise _failure.ComputeError("plain: cannot say its outputs")

    with pytest.raises(MXNetError, match="plain: cannot say"):
        apply(_Plain, (mx.nd.ones(2),))


def test_the_process_reports_an_error_nobody_read_and_exits_with_status_1(tmp_path):
    script = tmp_path / "lost.py"
    script.write_text(
        textwrap.dedent("""
        import mxrs as mx
        a = mx.nd.random.normal(0, -1, (2,))
        b = mx.nd.random.gamma(-1, 1, (2,))  # fails with a's error: one failure
        c = mx.nd.sample_poisson(-mx.nd.ones(2))  # after a's: a's again
        print("finished")
    """)
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip() == "finished"
    assert "never read their errors" in proc.stderr
    assert "DistributionError: normal: scale must be positive" in proc.stderr
    script.write_text(
        textwrap.dedent("""
        import mxrs as mx
        a = mx.nd.random.normal(0, -1, (2,))
        try:
            mx.nd.waitall()
        except mx.base.MXNetError:
            print("seen")
    """)
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert (proc.returncode, proc.stdout.strip(), proc.stderr) == (0, "seen", "")


#: Where MXNet 1.9.1 raises, step by step: each ``look(label, f)`` records whether ``f`` raised.
SCENARIOS = """
events = []
def look(label, f):
    try:
        f()
        events.append([label, "ok"])
    except mx.base.MXNetError:
        events.append([label, "raise"])
a = mx.nd.random.normal(0, -1, (2, 2))
look("shape", lambda: a.shape)
look("read", a.asnumpy)
look("read again", a.asnumpy)
look("waitall", mx.nd.waitall)
b = mx.nd.random.normal(0, -1, (2, 2))
c = mx.nd.dot(mx.nd.ones((2, 2)), b) + 1
look("read c", c.asnumpy)
look("read b", b.asnumpy)
look("waitall", mx.nd.waitall)
b = mx.nd.random.normal(0, -1, (2, 2))
look("waitall", mx.nd.waitall)
look("read b", b.wait_to_read)
look("waitall", mx.nd.waitall)
b = mx.nd.random.normal(0, -1, (2, 2))
b[:] = 1
look("read written", b.asnumpy)
look("read written again", b.asnumpy)
z = mx.nd.zeros((2, 2))
z[:] = mx.nd.random.normal(0, -1, (2, 2))
look("read target", z.asnumpy)
p, q = mx.nd.random_normal(0, -1, (2, 2)).copyto(mx.cpu())
look("read row", p.asnumpy)
look("read other row", q.asnumpy)
look("waitall", mx.nd.waitall)
b = mx.nd.random.normal(0, -1, (2, 2))
u = mx.nd.random.uniform(0, 1, (2,))
look("read next sampler", u.asnumpy)
look("waitall", mx.nd.waitall)
s = mx.nd.random.normal(0, -1, (2, 2))
e = mx.sym.make_loss(mx.sym.dot(mx.sym.var("x"), mx.sym.random.normal(0, -1, (2, 2))))
ex = e.bind(mx.cpu(), {"x": mx.nd.ones((2, 2))}, args_grad={"x": mx.nd.zeros((2, 2))})
look("forward", ex.forward)
look("backward", ex.backward)
look("read grad", ex.grad_arrays[0].asnumpy)
look("waitall", mx.nd.waitall)
result = events
"""


def test_errors_surface_where_mxnet_raises_them(tmp_path):
    want, _ = run(tmp_path, "import mxnet as mx\n" + SCENARIOS)
    env = {"mx": mx, "np": np}
    exec(SCENARIOS, env)
    assert env["result"] == want
