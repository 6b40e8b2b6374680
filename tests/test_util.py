"""mx.util: the NumPy shape flag, the mx.np decorators (which raise when called), the env."""

import threading

import mxrs as mx
import pytest
from mxrs.base import MXNetError


def test_np_shape_flag_is_scoped_and_per_thread():
    assert not mx.is_np_shape()
    assert mx.set_np_shape(True) is False
    try:
        assert mx.util.is_np_shape()
        seen = []
        t = threading.Thread(target=lambda: seen.append(mx.is_np_shape()))
        t.start()
        t.join()
        assert seen == [False]
        with mx.np_shape(False):
            assert not mx.is_np_shape()
        assert mx.is_np_shape()
    finally:
        assert mx.set_np_shape(False) is True


def test_use_np_shape_function_and_class():
    @mx.use_np_shape
    def f():
        return mx.is_np_shape()

    @mx.util.use_np_shape
    class C:
        def m(self):
            return mx.is_np_shape()

        @property
        def p(self):
            return mx.is_np_shape()

    assert f() and C().m() and C().p
    assert not mx.is_np_shape()
    with pytest.raises(TypeError):
        mx.use_np_shape(3)


def test_np_decorators_raise_when_called():
    from mxrs.test_utils import use_np

    @use_np
    def f():
        return 1

    @mx.use_np_array
    class C:
        def m(self):
            return 1

    assert f.__name__ == "f"
    with pytest.raises(MXNetError, match="not supported yet"):
        f()
    with pytest.raises(MXNetError, match="not supported yet"):
        C().m()
    assert not mx.is_np_array()


def test_set_np_and_reset_np():
    with pytest.raises(ValueError):
        mx.util.set_np(shape=False, array=True)
    with pytest.raises(MXNetError):
        mx.util.set_np()
    mx.util.set_np(shape=True, array=False)
    assert mx.is_np_shape()
    mx.util.reset_np()
    assert not mx.is_np_shape()


def test_getenv_setenv(monkeypatch):
    monkeypatch.delenv("MXRS_TEST_UTIL_VAR", raising=False)
    from mxrs.test_utils import getenv, setenv

    assert getenv("MXRS_TEST_UTIL_VAR") is None
    setenv("MXRS_TEST_UTIL_VAR", "1")
    assert mx.util.getenv("MXRS_TEST_UTIL_VAR") == "1"
    setenv("MXRS_TEST_UTIL_VAR", None)
    assert getenv("MXRS_TEST_UTIL_VAR") is None
