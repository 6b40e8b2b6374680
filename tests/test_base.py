"""The error hierarchy in mxrs.base."""

import os

import mxrs as mx
import pytest
from mxrs import base


@pytest.mark.parametrize(
    "name",
    ["ContextError", "KVStoreError", "ShapeMismatchError", "NodeLostError", "AuthenticationError"],
)
def test_every_error_is_an_mxnet_error(name):
    cls = getattr(base, name)
    assert issubclass(cls, mx.MXNetError)
    with pytest.raises(mx.MXNetError, match="boom"):
        raise cls("boom")


def test_kvstore_errors_share_a_base():
    for cls in (base.ShapeMismatchError, base.NodeLostError, base.AuthenticationError):
        assert issubclass(cls, base.KVStoreError)
    assert mx.base.MXNetError is mx.MXNetError


def test_mxnet_error_is_a_runtime_error():
    # As in MXNet 1.x: code written to catch RuntimeError sees mxrs's errors too.
    assert issubclass(base.MXNetError, RuntimeError)
    with pytest.raises(RuntimeError, match="unknown KVStore type 'nosuchstore'"):
        mx.kv.create("nosuchstore")


def test_a_store_shape_mismatch_is_caught_as_runtime_error():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones((2, 3)))
    try:
        kv.push(3, mx.nd.ones((4,)))
    except RuntimeError as err:
        assert isinstance(err, base.ShapeMismatchError)
        assert "holds shape (2, 3)" in str(err)
    else:
        pytest.fail("a push of the wrong shape was accepted")


def test_data_dir_is_mxrs_home_or_dot_mxrs(monkeypatch, tmp_path):
    from mxrs.base import data_dir

    monkeypatch.setenv("MXRS_HOME", str(tmp_path))
    assert data_dir() == str(tmp_path)
    monkeypatch.delenv("MXRS_HOME")
    assert data_dir() == os.path.expanduser(os.path.join("~", ".mxrs"))
