"""The installed package and its Rust extension."""

import mxrs
from mxrs import _native


def test_native_extension_is_the_installed_version():
    assert mxrs.__version__ == _native.__version__
    assert mxrs.__version__.count(".") == 2
