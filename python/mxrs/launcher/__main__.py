"""``python -m mxrs.launcher`` is ``mxrs-launch``."""

import sys

from .cli import main

sys.exit(main())
