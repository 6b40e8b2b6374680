"""The error hierarchy in mxrs.base."""

import mxrs as mx
import pytest
from mxrs import base


@pytest.mark.parametrize("name", ["ContextError", "KVStoreError", "ShapeMismatchError",
                                  "NodeLostError", "AuthenticationError"])
def test_every_error_is_an_mxnet_error(name):
    cls = getattr(base, name)
    assert issubclass(cls, mx.MXNetError)
    with pytest.raises(mx.MXNetError, match="boom"):
        raise cls("boom")


def test_kvstore_errors_share_a_base():
    for cls in (base.ShapeMismatchError, base.NodeLostError, base.AuthenticationError):
        assert issubclass(cls, base.KVStoreError)
    assert mx.base.MXNetError is mx.MXNetError
