"""Bounding-box operators of ``mx.nd.contrib``: ``box_iou`` and ``box_nms``.

Boxes are encoded 'corner' (``[xmin, ymin, xmax, ymax]``) or 'center' (``[x, y, width, height]``).
Areas, intersections and IoUs are computed in the boxes' own dtype in the order MXNet's kernels
use, so thresholds decide as MXNet's do. Non-maximum suppression is greedy and so sequential: the
IoU matrix of the candidates is computed with the array library, and only the boolean "would
suppress" matrix goes to the host for the greedy pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...base import InvalidShapeError, MXNetError
from ..core.array import ArrayT
from ..core.op import Op, apply

__all__ = ["box_iou", "box_nms", "box_non_maximum_suppression"]

_FORMATS = ("corner", "center")


def _check_format(name: str, fmt: str) -> None:
    if fmt not in _FORMATS:
        raise MXNetError(f"{name} must be 'corner' or 'center', not {fmt!r}")


def _edges(xp, lo, ext, fmt):
    """The low and high edges of boxes along one axis from two box fields."""
    if fmt == "corner":
        return lo, ext
    half = ext / 2
    return lo - half, lo + half


def _overlap(xp, a, b, fmt):
    """Intersection length along one axis: ``a`` and ``b`` hold the axis' two fields."""
    al, ar = _edges(xp, a[0], a[1], fmt)
    bl, br = _edges(xp, b[0], b[1], fmt)
    w = xp.minimum(ar, br) - xp.maximum(al, bl)
    return xp.maximum(w, 0)


def _area(xp, box, fmt):
    """Box areas (0 for boxes of negative width or height); ``box[..., :4]`` holds the fields."""
    if fmt == "corner":
        w, h = box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]
    else:
        w, h = box[..., 2], box[..., 3]
    return xp.where((w < 0) | (h < 0), 0, w * h).astype(box.dtype, copy=False)


def _iou(xp, lhs, rhs, fmt):
    """IoU of every box of ``lhs`` (shape (L, 4)) with every box of ``rhs`` (shape (R, 4))."""
    lt, rt = lhs[:, None, :], rhs[None, :, :]
    inter = _overlap(xp, (lt[..., 0], lt[..., 2]), (rt[..., 0], rt[..., 2]), fmt)
    inter = inter * _overlap(xp, (lt[..., 1], lt[..., 3]), (rt[..., 1], rt[..., 3]), fmt)
    union = _area(xp, lhs, fmt)[:, None] + _area(xp, rhs, fmt)[None, :] - inter
    pos = inter > 0
    return inter, union, pos


class _BoxIoU(Op):
    def forward(self, lhs, rhs, fmt):
        xp = self.xp
        self.shapes = lhs.shape, rhs.shape
        a, b = lhs.reshape(-1, 4), rhs.reshape(-1, 4)
        inter, union, pos = _iou(xp, a, b, fmt)
        out = xp.where(pos, inter / xp.where(pos, union, 1), 0).astype(lhs.dtype, copy=False)
        return out.reshape(lhs.shape[:-1] + rhs.shape[:-1])

    def backward(self, g):
        # MXNet back-propagates zeros through box_iou.
        (ls, rs), (ln, rn) = self.shapes, self.needs
        zeros = self.xp.zeros
        return (zeros(ls, g.dtype) if ln else None), (zeros(rs, g.dtype) if rn else None)


def box_iou(lhs: ArrayT, rhs: ArrayT, format: str = "corner") -> ArrayT:
    """Intersection-over-union of every box of ``lhs`` with every box of ``rhs``.

    Parameters
    ----------
    lhs : NDArray
        Boxes of shape ``(a_1, ..., a_n, 4)``.
    rhs : NDArray
        Boxes of shape ``(b_1, ..., b_m, 4)``.
    format : {'corner', 'center'}, default 'corner'
        'corner': ``[xmin, ymin, xmax, ymax]``; 'center': ``[x, y, width, height]``.

    Returns
    -------
    NDArray
        Shape ``(a_1, ..., a_n, b_1, ..., b_m)``; 0 where boxes do not overlap. Its gradient is
        zero, as in MXNet.

    Examples
    --------
    >>> x = mx.nd.array([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.5]])
    >>> mx.nd.contrib.box_iou(x, mx.nd.array([[0.25, 0.25, 0.75, 0.75]])).asnumpy()
    array([[0.14285715],
           [0.14285715]], dtype=float32)
    """
    _check_format("box_iou format", format)
    for name, a in (("lhs", lhs), ("rhs", rhs)):
        if a.ndim < 2 or a.shape[-1] != 4:
            raise InvalidShapeError(
                f"box_iou: {name} must have shape (..., 4) with at least 2 dimensions, got "
                f"{a.shape}"
            )
    return apply(_BoxIoU, (lhs, rhs), fmt=format)


def _convert(xp, box, to):
    """Boxes ``box`` (shape (..., 4)) converted to format ``to`` from the other format."""
    a, b, c, d = box[..., 0], box[..., 1], box[..., 2], box[..., 3]
    if to == "center":
        return xp.stack([(a + c) / 2, (b + d) / 2, c - a, d - b], axis=-1)
    hw, hh = c / 2, d / 2
    return xp.stack([a - hw, b - hh, a + hw, b + hh], axis=-1)


class _BoxNMS(Op):
    def forward(self, data, p):
        xp, to_host = self.xp, self.be.to_host
        shape = data.shape
        n, width = shape[-2], shape[-1]
        d3 = data.reshape(-1, n, width)
        nb = d3.shape[0]
        self.shape = shape
        topk = n if p["topk"] < 0 else min(n, p["topk"])
        if topk < 1:  # MXNet passes the input through unchanged
            self.keep = None
            return data.copy()
        cs, si, ii = p["coord_start"], p["score_index"], p["id_index"]
        # The bookkeeping (which boxes, in which order) is done on the host with NumPy.
        scores = to_host(d3[:, :, si])
        valid = scores > np.float32(p["valid_thresh"])  # MXNet's thresholds are float32
        ids = None
        if ii >= 0:
            raw_ids = to_host(d3[:, :, ii])
            valid &= raw_ids != p["background_id"]
            ids = raw_ids.astype(np.int64)
        out = xp.full(d3.shape, -1, dtype=data.dtype)
        keep = []
        for b in range(nb):
            cand = valid[b].nonzero()[0]
            cand = cand[(-scores[b, cand]).argsort(kind="stable")][:topk]
            if cand.size > 1:
                sup = self._suppresses(d3[b, xp.asarray(cand), cs : cs + 4], p)
                if ids is not None and not p["force_suppress"]:
                    cid = ids[b, cand]
                    sup &= cid[:, None] == cid[None, :]
                alive = np.ones(cand.size, dtype=bool)
                for r in range(cand.size - 1):
                    if alive[r]:
                        alive[r + 1 :] &= ~sup[r, r + 1 :]
                cand = cand[alive]
            keep.append(cand)
            if cand.size:
                out[b, : cand.size] = d3[b, xp.asarray(cand)]
        self.keep = keep
        if p["in_format"] != p["out_format"]:
            # as MXNet, rows whose first coordinate is negative (the -1 rows) stay as they are
            box = out[..., cs : cs + 4]
            conv = _convert(xp, box, p["out_format"]).astype(data.dtype, copy=False)
            out[..., cs : cs + 4] = xp.where((box[..., :1] < 0), box, conv)
        return out.reshape(shape)

    def _suppresses(self, boxes, p):
        """Host boolean matrix: box ``r`` would suppress box ``c`` (IoU above the threshold)."""
        xp = self.xp
        inter, union, _ = _iou(xp, boxes, boxes, p["in_format"])
        ok = union != 0  # 0 / 0 is NaN in MXNet, which suppresses nothing
        iou = inter / xp.where(ok, union, 1)
        return self.be.to_host(ok & (iou > np.float32(p["overlap_thresh"])))

    def backward(self, g):
        if self.keep is None:
            return g
        xp = self.xp
        n, width = self.shape[-2], self.shape[-1]
        g3 = g.reshape(-1, n, width)
        dx = xp.zeros(g3.shape, g.dtype)
        for b, cand in enumerate(self.keep):
            if cand.size:
                dx[b, xp.asarray(cand)] = g3[b, : cand.size]
        return dx.reshape(self.shape)


def _check_nms(shape: tuple[int, ...], p: dict[str, Any]) -> None:
    if len(shape) < 2:
        raise InvalidShapeError(
            f"box_nms: data must have at least 2 dimensions (..., num_boxes, box_width), got "
            f"{shape}"
        )
    width = shape[-1]
    need = 6 if p["id_index"] > 0 else 5
    if width < need:
        raise InvalidShapeError(
            f"box_nms: boxes have {width} elements, at least {need} are needed (score and 4 "
            "coordinates, and the class id when id_index is set)"
        )
    cs, si, ii = p["coord_start"], p["score_index"], p["id_index"]
    if not (0 <= cs and cs + 3 < width):
        raise MXNetError(f"box_nms: coordinates {cs}..{cs + 3} are out of range for width {width}")
    if not 0 <= si < width:
        raise MXNetError(f"box_nms: score_index {si} is out of range for width {width}")
    if cs <= si <= cs + 3:
        raise MXNetError(f"box_nms: score_index {si} falls on the coordinates {cs}..{cs + 3}")
    if ii >= 0:
        if ii >= width:
            raise MXNetError(f"box_nms: id_index {ii} is out of range for width {width}")
        if cs <= ii <= cs + 3:
            raise MXNetError(f"box_nms: id_index {ii} falls on the coordinates {cs}..{cs + 3}")
        if ii == si:
            raise MXNetError(f"box_nms: id_index and score_index are both {ii}")
    _check_format("box_nms in_format", p["in_format"])
    _check_format("box_nms out_format", p["out_format"])


def box_nms(
    data: ArrayT,
    overlap_thresh: float = 0.5,
    valid_thresh: float = 0,
    topk: int = -1,
    coord_start: int = 2,
    score_index: int = 1,
    id_index: int = -1,
    background_id: int = -1,
    force_suppress: bool = False,
    in_format: str = "corner",
    out_format: str = "corner",
) -> ArrayT:
    """Non-maximum suppression: keep the best-scoring boxes, drop those overlapping them.

    Each batch (all leading axes; the last two are boxes and box fields) is processed on its
    own: boxes whose score is at most ``valid_thresh`` (and, when ``id_index >= 0``, those of
    class ``background_id``) are dropped; the rest are sorted by descending score (ties keep
    their order), cut to the first ``topk``, and a box is suppressed when its IoU with a kept,
    better-scoring box exceeds ``overlap_thresh`` (only boxes of the same class suppress each
    other unless ``force_suppress``). The kept boxes come first, in score order; the remaining
    rows are -1. ``topk=0`` returns the input unchanged.

    Parameters
    ----------
    data : NDArray
        Shape ``(..., num_boxes, width)``; by default a box is ``[id, score, x1, y1, x2, y2]``.
    overlap_thresh : float, default 0.5
    valid_thresh : float, default 0
    topk : int, default -1
        How many of the best boxes take part; -1 for all.
    coord_start, score_index, id_index : int
        Where the 4 coordinates, the score and the class id (-1: none) are in a box.
    background_id : int, default -1
        The class dropped before suppression when ``id_index >= 0``.
    force_suppress : bool, default False
        Suppress across classes too.
    in_format, out_format : {'corner', 'center'}
        Box encoding of the input and of the output. As in MXNet, an output row whose first
        coordinate is negative is left unconverted.

    Returns
    -------
    NDArray
        Same shape as ``data``. Its gradient goes to the kept boxes' input rows.

    Examples
    --------
    >>> x = mx.nd.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
    ...                  [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]])
    >>> mx.nd.contrib.box_nms(x, overlap_thresh=0.1, id_index=0, force_suppress=True).asnumpy()
    array([[ 2. ,  0.6,  0.5,  0.5,  0.7,  0.8],
           [ 0. ,  0.5,  0.1,  0.1,  0.2,  0.2],
           [-1. , -1. , -1. , -1. , -1. , -1. ],
           [-1. , -1. , -1. , -1. , -1. , -1. ]], dtype=float32)
    """
    p = {
        "overlap_thresh": float(overlap_thresh),
        "valid_thresh": float(valid_thresh),
        "topk": int(topk),
        "coord_start": int(coord_start),
        "score_index": int(score_index),
        "id_index": int(id_index),
        "background_id": int(background_id),
        "force_suppress": bool(force_suppress),
        "in_format": in_format,
        "out_format": out_format,
    }
    _check_nms(data.shape, p)
    return apply(_BoxNMS, (data,), p=p)


box_non_maximum_suppression = box_nms
