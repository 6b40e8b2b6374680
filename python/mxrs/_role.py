"""Runs a scheduler or server when ``import mxrs`` happens in a process launched for that role.

MXNet's launch tools start every process of a job with the same command (``python train.py``)
and tell each its role through ``DMLC_ROLE``; a scheduler or server process turns into that
role on ``import`` and exits when the job ends. This module is the only import-time effect of
mxrs, and the ``ps-scheduler`` / ``ps-server`` console scripts bypass it (they take flags).

A scheduler starts as soon as ``import mxrs`` begins (:func:`run_if_scheduler`). A server
starts once the rest of mxrs is imported (:func:`run_if_server`, last in ``mxrs/__init__``):
it may run the Python optimizers workers send it (pickled, as MXNet 1.9.1 does), which need
the whole of mxrs.
"""

import os
import sys

from . import _native

_CONSOLE_SCRIPTS = ("ps-scheduler", "ps-server", "mxrs-launch")


def _run_if(role: str) -> None:
    """Runs ``role`` and exits with its status, if ``DMLC_ROLE`` names it (not in our console
    scripts)."""
    if os.environ.get("DMLC_ROLE", "").strip().lower() != role:
        return
    if os.path.basename(sys.argv[0] if sys.argv else "") in _CONSOLE_SCRIPTS:
        return
    sys.exit(_native.run_role(role))


def run_if_scheduler() -> None:
    """Runs the scheduler and exits with its status, if ``DMLC_ROLE`` is ``scheduler``."""
    _run_if("scheduler")


def run_if_server() -> None:
    """Runs the server and exits with its status, if ``DMLC_ROLE`` is ``server``."""
    _run_if("server")
