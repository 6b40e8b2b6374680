"""Runs a scheduler or server when ``import mxrs`` happens in a process launched for that role.

MXNet's launch tools start every process of a job with the same command (``python train.py``)
and tell each its role through ``DMLC_ROLE``; a scheduler or server process turns into that
role on ``import`` and exits when the job ends. This module is the only import-time effect of
mxrs, and the ``ps-scheduler`` / ``ps-server`` console scripts bypass it (they take flags).
"""

import os
import sys

from . import _native

_ROLES = ("scheduler", "server")
_CONSOLE_SCRIPTS = ("ps-scheduler", "ps-server", "mxrs-launch")


def run_if_scheduler_or_server():
    """Runs the role named by ``DMLC_ROLE`` and exits with its status, if it is one of ours."""
    role = os.environ.get("DMLC_ROLE", "").strip().lower()
    if role not in _ROLES:
        return
    if os.path.basename(sys.argv[0] if sys.argv else "") in _CONSOLE_SCRIPTS:
        return
    sys.exit(_native.run_role(role))
