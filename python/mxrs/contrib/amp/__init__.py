"""``mx.contrib.amp``: automatic mixed precision (float16 on GPUs, bfloat16 on CPUs).

Layout
------
amp
    The API: ``init``, ``init_trainer``, ``scale_loss``, ``unscale``, the ``convert_*``
    functions and the ``list_*`` functions (``from mxnet.contrib.amp import amp`` imports it).
loss_scaler
    ``LossScaler``: the dynamic loss scale.
conversion, _convert
    Converting float32 graphs, models and Gluon blocks; the graph pass.
_wrap
    The operator wrappers ``init`` installs.
lists
    The op lists (``symbol_fp16``, ``symbol_bf16``).
"""

from . import amp as amp
from . import lists as lists
from .amp import *  # noqa: F403
from .amp import __all__ as __all__
