"""Where pretrained weights would come from: mxrs ships none and downloads nothing.

MXNet's zoo fetches ``<name>-<hash>.params`` files from its model repository when a model is
built with ``pretrained=True``. mxrs does not, so every ``pretrained=True`` ends here with an
:class:`~mxrs.base.MXNetError` that says how to load weights obtained some other way.
"""

from __future__ import annotations

import os

from ...base import MXNetError

__all__ = ["default_root", "get_model_file"]


def default_root() -> str:
    """``$MXRS_HOME/models``, with ``MXRS_HOME`` defaulting to ``~/.mxrs``: the ``root`` default
    of the zoo's constructors."""
    home = os.environ.get("MXRS_HOME") or os.path.join("~", ".mxrs")
    return os.path.join(os.path.expanduser(home), "models")


def get_model_file(name: str, root: str | None = None) -> str:
    """Return the path of the pretrained weights of model ``name``: never, in mxrs.

    Parameters
    ----------
    name : str
        The model's name in the zoo, e.g. ``'resnet18_v1'``.
    root : str, optional
        Accepted for compatibility with MXNet 1.9.1's signature.

    Raises
    ------
    MXNetError
        Always: mxrs ships no pretrained weights and downloads nothing.
    """
    raise MXNetError(
        f"pretrained weights for {name!r} are not available: mxrs ships no pretrained weights "
        "and downloads nothing. Build the model with pretrained=False, then load weights you "
        "have: net.load_parameters(path) for a file written by mxrs's save_parameters, or "
        "net.collect_params()[name].set_data(array) parameter by parameter."
    )
