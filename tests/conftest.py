"""Makes the shared ``gradcheck`` helper importable from every test module."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
