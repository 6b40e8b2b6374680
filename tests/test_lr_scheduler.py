"""Learning-rate schedules (``mx.lr_scheduler``): values at given updates, warmup, errors."""

import math

import pytest
from mxrs import lr_scheduler
from mxrs.base import MXNetError


def test_factor_scheduler():
    s = lr_scheduler.FactorScheduler(step=3, factor=0.5, base_lr=1.0)
    # The rate decays once num_update passes 3, 6, 9...
    assert [s(n) for n in range(1, 11)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125]
    assert s.count == 9


def test_factor_scheduler_is_stateful_and_catches_up():
    s = lr_scheduler.FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    assert s(35) == pytest.approx(1e-3)  # resumed training: three decays at once
    assert s(1) == pytest.approx(1e-3)  # never goes back
    assert s.count == 30


def test_factor_scheduler_stops_at_stop_factor_lr():
    s = lr_scheduler.FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0)
    assert s(100) == 1e-3


def test_factor_scheduler_warmup():
    s = lr_scheduler.FactorScheduler(
        step=5, factor=0.5, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.2
    )
    assert [s(n) for n in range(4)] == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert [s(n) for n in (4, 5, 6)] == [1.0, 1.0, 0.5]
    c = lr_scheduler.FactorScheduler(
        step=5, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.2, warmup_mode="constant"
    )
    assert [c(n) for n in range(5)] == [0.2, 0.2, 0.2, 0.2, 1.0]


def test_multi_factor_scheduler():
    s = lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    got = [s(n) for n in range(1, 8)]
    assert got == pytest.approx([1, 1, 0.1, 0.1, 0.1, 0.01, 0.01])
    assert (s.cur_step_ind, s.count) == (2, 5)
    s = lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    assert s(6) == pytest.approx(0.01)


def test_multi_factor_scheduler_warmup():
    s = lr_scheduler.MultiFactorScheduler(step=[5], factor=0.5, base_lr=0.1, warmup_steps=2)
    assert [s(n) for n in (0, 1, 2, 5, 6)] == pytest.approx([0, 0.05, 0.1, 0.1, 0.05])


def test_poly_scheduler():
    s = lr_scheduler.PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1)
    for n in (0, 3, 10):
        assert s(n) == pytest.approx(0.1 + 0.9 * (1 - n / 10) ** 2)
    assert s(20) == pytest.approx(0.1)
    w = lr_scheduler.PolyScheduler(max_update=12, base_lr=1.0, pwr=1, warmup_steps=2)
    assert [w(n) for n in (0, 1)] == [0.0, 0.5]
    assert w(7) == pytest.approx(1 - 5 / 10)


def test_cosine_scheduler():
    s = lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.2)
    for n in (0, 4, 10):
        assert s(n) == pytest.approx(0.2 + 0.8 * (1 + math.cos(math.pi * n / 10)) / 2)
    assert s(11) == pytest.approx(0.2)
    w = lr_scheduler.CosineScheduler(
        max_update=14, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.5
    )
    assert w(2) == 0.75
    assert w(9) == pytest.approx((1 + math.cos(math.pi * 5 / 10)) / 2)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: lr_scheduler.FactorScheduler(step=0), "greater or equal than 1"),
        (lambda: lr_scheduler.FactorScheduler(step=2, factor=1.5), "no more than 1"),
        (lambda: lr_scheduler.MultiFactorScheduler(step=[3, 3]), "increasing"),
        (lambda: lr_scheduler.MultiFactorScheduler(step=[0, 3]), "greater or equal than 1"),
        (lambda: lr_scheduler.MultiFactorScheduler(step=3), "non-empty list"),
        (lambda: lr_scheduler.PolyScheduler(max_update=0), "strictly positive"),
        (lambda: lr_scheduler.CosineScheduler(max_update=2.5), "must be an int"),
        (
            lambda: lr_scheduler.FactorScheduler(2, base_lr=0.1, warmup_begin_lr=0.2),
            "higher than warmup_begin_lr",
        ),
        (lambda: lr_scheduler.FactorScheduler(2, warmup_steps=-1), "positive or 0"),
        (lambda: lr_scheduler.FactorScheduler(2, warmup_steps=2, warmup_mode="cubic"), "'cubic'"),
    ],
)
def test_bad_arguments_are_named(make, message):
    with pytest.raises(MXNetError, match=message):
        make()


def test_base_class_is_abstract():
    with pytest.raises(NotImplementedError):
        lr_scheduler.LRScheduler()(1)
