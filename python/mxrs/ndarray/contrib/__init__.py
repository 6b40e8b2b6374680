"""``mx.nd.contrib``: MXNet 1.x's contributed operators (also ``mx.contrib.nd``).

Layout
------
control_flow
    ``foreach``, ``while_loop`` and ``cond``, run imperatively (autograd records the steps).
ops
    Array operators: ``boolean_mask``, ``index_copy``, ``index_array``, ``arange_like``,
    ``div_sqrt_dim``, ``quadratic``, ``gradientmultiplier``, ``isfinite/isnan/isinf``,
    ``allclose``, ``rand_zipfian``.
box
    Bounding boxes: ``box_iou``, ``box_nms`` (``box_non_maximum_suppression``).
resize
    Resizing NCHW images: ``BilinearResize2D``, ``AdaptiveAvgPooling2D``.
proposal
    Faster R-CNN's region proposals: ``Proposal``, ``MultiProposal``.
deformable
    Deformable convolutions: ``DeformableConvolution``, ``ModulatedDeformableConvolution``.

``BatchNormWithReLU`` is defined beside ``BatchNorm`` in :mod:`mxrs.ndarray.normalization`,
``ROIAlign`` beside ``ROIPooling`` in :mod:`mxrs.ndarray.roi`, the optimizer updates
``adamw_update``, ``mp_adamw_update``, ``multi_adamw_update``, ``multi_mp_adamw_update`` and
``group_adagrad_update`` beside the others in :mod:`mxrs.ndarray.optimizer_ops`.

The operators take MXNet's ``out=`` and ``name=`` keywords here, as in ``mx.nd``.
"""

from __future__ import annotations

from ..core.op import with_out
from ..normalization import BatchNormWithReLU
from ..optimizer_ops import (
    adamw_update,
    group_adagrad_update,
    mp_adamw_update,
    multi_adamw_update,
    multi_mp_adamw_update,
)
from ..roi import ROIAlign
from .box import box_iou, box_nms, box_non_maximum_suppression
from .control_flow import cond, foreach, while_loop
from .deformable import DeformableConvolution, ModulatedDeformableConvolution
from .ops import (
    allclose,
    arange_like,
    boolean_mask,
    div_sqrt_dim,
    gradientmultiplier,
    index_array,
    index_copy,
    isfinite,
    isinf,
    isnan,
    quadratic,
    rand_zipfian,
)
from .proposal import MultiProposal, Proposal
from .resize import AdaptiveAvgPooling2D, BilinearResize2D

__all__ = [
    "foreach",
    "while_loop",
    "cond",
    "boolean_mask",
    "arange_like",
    "index_copy",
    "index_array",
    "div_sqrt_dim",
    "quadratic",
    "rand_zipfian",
    "gradientmultiplier",
    "isfinite",
    "isnan",
    "isinf",
    "allclose",
    "BilinearResize2D",
    "AdaptiveAvgPooling2D",
    "BatchNormWithReLU",
    "box_iou",
    "box_nms",
    "box_non_maximum_suppression",
    "ROIAlign",
    "Proposal",
    "MultiProposal",
    "DeformableConvolution",
    "ModulatedDeformableConvolution",
    "adamw_update",
    "mp_adamw_update",
    "multi_adamw_update",
    "multi_mp_adamw_update",
    "group_adagrad_update",
]


def _take_out() -> None:
    """Let the operators take MXNet's ``out=`` and ``name=`` keywords."""
    space = globals()
    for name in __all__:
        if name not in ("foreach", "while_loop", "cond", "box_non_maximum_suppression"):
            space[name] = with_out(space[name])
    space["box_non_maximum_suppression"] = space["box_nms"]


_take_out()
