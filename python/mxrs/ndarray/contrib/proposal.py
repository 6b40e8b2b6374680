"""The region-proposal layer of Faster R-CNN: ``Proposal`` (one image) and ``MultiProposal`` (a
batch), as MXNet 1.9.1 defines them.

For each image, from ``cls_prob`` ``(N, 2A, H, W)`` (the last ``A`` channels are the
foreground scores), ``bbox_pred`` ``(N, 4A, H, W)`` and ``im_info`` ``(N, 3)`` (height, width,
scale of the image):

1. Anchors: a ``feature_stride`` square at the origin is reshaped to each of ``ratios``
   (height over width, areas rounded as py-faster-rcnn does) and grown by each of ``scales``,
   ratio-major (anchor ``a = ratio * len(scales) + scale``), then shifted to every cell
   ``(h, w)`` by ``feature_stride``; proposal ``(h * W + w) * A + a``.
2. Decoding: the deltas ``(dx, dy, dw, dh)`` of channel ``4a...4a+3`` move the anchor's centre
   by its size and scale its size by ``exp`` (with ``iou_loss``, they are added to its
   corners); the boxes are clipped to the image.
3. Filtering: cells beyond the image (``h >= int(height / feature_stride)``, the same for the
   width) and boxes narrower or lower than ``rpn_min_size * scale`` (then also grown by half of
   that on each side) get the score -1. They stay candidates, at the end of the order.
4. The ``rpn_pre_nms_top_n`` best scores (stable order for ties) go through greedy
   non-maximum suppression (IoU with MXNet's ``+1`` pixel sizes above ``threshold``), which
   keeps at most ``rpn_post_nms_top_n``; when it keeps fewer, the kept ones repeat in turn to
   fill ``rpn_post_nms_top_n`` rows.

Output rows are ``[batch_index, x1, y1, x2, y2]`` ``(N * rpn_post_nms_top_n, 5)``, and with
``output_score`` the scores ``(N * rpn_post_nms_top_n, 1)`` too. The arithmetic is float32 in
MXNet's order, so ranks and suppression decide as MXNet's do. The gradient of every input is
zero, as in MXNet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...base import InvalidShapeError, MXNetError
from ..core.array import ArrayT
from ..core.op import Op, apply

__all__ = ["Proposal", "MultiProposal"]

_F = np.float32


def _anchors(stride: int, ratios: Sequence[float], scales: Sequence[float]) -> np.ndarray:
    """The ``(A, 4)`` anchors at cell ``(0, 0)``, ratio-major, in float32."""
    side = _F(stride)  # the base box is [0, 0, stride - 1, stride - 1]
    ctr = _F(0.5 * (float(side) - 1.0))
    rows = []
    for ratio in (_F(r) for r in ratios):
        for scale in (_F(s) for s in scales):
            w = np.floor(np.sqrt(np.floor(side * side / ratio)) + _F(0.5)) * scale
            h = np.floor(w / scale * ratio + _F(0.5)) * scale
            hw, hh = _F(0.5) * (w - _F(1)), _F(0.5) * (h - _F(1))
            rows.append([ctr - hw, ctr - hh, ctr + hw, ctr + hh])
    return np.asarray(rows, dtype=_F)


def _decode(boxes: np.ndarray, deltas: np.ndarray, iou_loss: bool) -> np.ndarray:
    """Boxes ``(K, 4)`` moved by ``deltas`` ``(K, 4)``, float32 as MXNet computes them."""
    if iou_loss:
        return (boxes + deltas).astype(_F)
    x1, y1, x2, y2 = boxes.T
    dx, dy, dw, dh = deltas.T
    w = (x2 - x1).astype(np.float64) + 1.0
    h = (y2 - y1).astype(np.float64) + 1.0
    cx = (x1 + 0.5 * (w - 1.0)).astype(_F)
    cy = (y1 + 0.5 * (h - 1.0)).astype(_F)
    w, h = w.astype(_F), h.astype(_F)
    px, py = dx * w + cx, dy * h + cy
    pw, ph = np.exp(dw) * w, np.exp(dh) * h
    hw = 0.5 * (pw.astype(np.float64) - 1.0)
    hh = 0.5 * (ph.astype(np.float64) - 1.0)
    return np.stack([px - hw, py - hh, px + hw, py + hh], axis=1).astype(_F)


def _nms(boxes: np.ndarray, thresh: float, most: int) -> list[int]:
    """Greedy suppression of ``boxes`` ``(K, 4)`` (best first): the indices kept, at most
    ``most``."""
    x1, y1, x2, y2 = boxes.T
    area = (x2 - x1 + _F(1)) * (y2 - y1 + _F(1))
    alive = np.ones(len(boxes), dtype=bool)
    keep: list[int] = []
    i = 0
    while len(keep) < most:
        rest = np.flatnonzero(alive[i:])
        if not rest.size:
            break
        i += int(rest[0])
        keep.append(i)
        j = slice(i + 1, None)
        iw = np.maximum(_F(0), np.minimum(x2[i], x2[j]) - np.maximum(x1[i], x1[j]) + _F(1))
        ih = np.maximum(_F(0), np.minimum(y2[i], y2[j]) - np.maximum(y1[i], y1[j]) + _F(1))
        inter = iw * ih
        alive[j] &= ~(inter / (area[i] + area[j] - inter) > _F(thresh))
        i += 1
    return keep


def _propose(cls, deltas, info, anchors, p):
    """One image's ``rpn_post_nms_top_n`` boxes ``(P, 4)`` and scores ``(P,)`` on the host."""
    na, (fh, fw), stride = len(anchors), cls.shape[1:], p["feature_stride"]
    scores = cls[na:].transpose(1, 2, 0).reshape(-1).astype(_F)  # (h, w, a) order
    ys, xs = np.meshgrid(np.arange(fh), np.arange(fw), indexing="ij")
    shift = (np.stack([xs, ys, xs, ys], axis=-1) * stride).astype(_F).reshape(-1, 1, 4)
    boxes = (shift + anchors[None]).reshape(-1, 4)
    d = deltas.reshape(na, 4, fh, fw).transpose(2, 3, 0, 1).reshape(-1, 4).astype(_F)
    boxes = _decode(boxes, d, p["iou_loss"])
    im_h, im_w, im_scale = (_F(v) for v in info)
    # MXNet's order: the upper bound first, so an image under a pixel clips to 0
    boxes[:, 0::2] = np.maximum(np.minimum(boxes[:, 0::2], im_w - _F(1)), _F(0))
    boxes[:, 1::2] = np.maximum(np.minimum(boxes[:, 1::2], im_h - _F(1)), _F(0))
    real_h, real_w = int(im_h / _F(stride)), int(im_w / _F(stride))
    if real_h > fh or real_w > fw:
        raise MXNetError(
            f"Proposal: im_info {im_h:g}x{im_w:g} over feature_stride {stride} needs a feature "
            f"map of at least {real_h}x{real_w}, but cls_prob's is {fh}x{fw}"
        )
    beyond = ((ys >= real_h) | (xs >= real_w)).reshape(-1, 1)
    scores = np.where(np.broadcast_to(beyond, (fh * fw, na)).reshape(-1), _F(-1), scores)
    min_size = _F(p["rpn_min_size"]) * im_scale
    small = (boxes[:, 2] - boxes[:, 0] + _F(1) < min_size) | (
        boxes[:, 3] - boxes[:, 1] + _F(1) < min_size
    )
    grow = _F(min_size / _F(2))
    boxes[small] += np.asarray([-grow, -grow, grow, grow], dtype=_F)
    scores = np.where(small, _F(-1), scores)
    order = np.argsort(-scores, kind="stable")[: min(p["rpn_pre_nms_top_n"], len(scores))]
    keep = _nms(boxes[order], p["threshold"], p["rpn_post_nms_top_n"])
    picks = order[np.asarray(keep)[np.arange(p["rpn_post_nms_top_n"]) % len(keep)]]
    return boxes[picks], scores[picks]


class _Proposal(Op):
    def forward(self, cls, bbox, info, p):
        n = cls.shape[0]
        host = self.be.to_host
        cls_h, bbox_h, info_h = (np.asarray(host(a)) for a in (cls, bbox, info))
        anchors = _anchors(p["feature_stride"], p["ratios"], p["scales"])
        post = p["rpn_post_nms_top_n"]
        rois = np.zeros((n * post, 5), dtype=_F)
        scores = np.zeros((n * post, 1), dtype=_F)
        for b in range(n):
            boxes, sc = _propose(cls_h[b], bbox_h[b], info_h[b, :3], anchors, p)
            rois[b * post : (b + 1) * post, 0] = b
            rois[b * post : (b + 1) * post, 1:] = boxes
            scores[b * post : (b + 1) * post, 0] = sc
        self.shapes = [(a.shape, a.dtype) for a in (cls, bbox, info)]
        xp = self.xp
        if p["output_score"]:
            return xp.asarray(rois), xp.asarray(scores)
        return xp.asarray(rois)

    def backward(self, *out_grads):
        xp = self.xp
        return tuple(
            xp.zeros(s, dtype=d) if need else None
            for (s, d), need in zip(self.shapes, self.needs, strict=True)
        )


def _check_shapes(name: str, cls: Any, bbox: Any, info: Any, p: dict[str, Any]) -> None:
    """Raise InvalidShapeError unless the inputs' shapes fit each other and the anchors."""
    if cls.ndim != 4 or bbox.ndim != 4 or info.ndim != 2 or info.shape[1] < 3:
        raise InvalidShapeError(
            f"{name}: cls_prob (N, 2A, H, W), bbox_pred (N, 4A, H, W) and im_info (N, 3), "
            f"got {cls.shape}, {bbox.shape} and {info.shape}"
        )
    n, c, fh, fw = cls.shape
    na = len(p["scales"]) * len(p["ratios"])
    if c != 2 * na or bbox.shape != (n, 4 * na, fh, fw) or info.shape[0] != n:
        raise InvalidShapeError(
            f"{name}: {na} anchors need cls_prob ({n}, {2 * na}, {fh}, {fw}), bbox_pred "
            f"({n}, {4 * na}, {fh}, {fw}) and im_info ({n}, 3), got {cls.shape}, "
            f"{bbox.shape} and {info.shape}"
        )
    if name == "Proposal" and n != 1:
        raise InvalidShapeError(f"Proposal: takes one image (use MultiProposal), got {n}")


def _params(
    name: str,
    pre: int,
    post: int,
    threshold: float,
    min_size: int,
    scales: Sequence[float],
    ratios: Sequence[float],
    stride: int,
    output_score: bool,
    iou_loss: bool,
) -> dict[str, Any]:
    """The attributes as the op reads them, checked."""
    scales_t = tuple(float(s) for s in scales)
    ratios_t = tuple(float(r) for r in ratios)
    if not scales_t or not ratios_t or min(scales_t + ratios_t) <= 0:
        raise MXNetError(f"{name}: scales and ratios must be non-empty and positive")
    if int(pre) < 1 or int(post) < 1:
        raise MXNetError(
            f"{name}: rpn_pre_nms_top_n and rpn_post_nms_top_n must be positive, got {pre} and "
            f"{post}"
        )
    if int(stride) < 1:
        raise MXNetError(f"{name}: feature_stride must be positive, got {stride}")
    return dict(
        rpn_pre_nms_top_n=int(pre),
        rpn_post_nms_top_n=int(post),
        threshold=float(threshold),
        rpn_min_size=int(min_size),
        scales=scales_t,
        ratios=ratios_t,
        feature_stride=int(stride),
        output_score=bool(output_score),
        iou_loss=bool(iou_loss),
    )


def Proposal(
    cls_prob: ArrayT,
    bbox_pred: ArrayT,
    im_info: ArrayT,
    rpn_pre_nms_top_n: int = 6000,
    rpn_post_nms_top_n: int = 300,
    threshold: float = 0.7,
    rpn_min_size: int = 16,
    scales: Sequence[float] = (4.0, 8.0, 16.0, 32.0),
    ratios: Sequence[float] = (0.5, 1.0, 2.0),
    feature_stride: int = 16,
    output_score: bool = False,
    iou_loss: bool = False,
) -> Any:
    """Region proposals of one image from an RPN's scores and box deltas; see the module
    docstring.

    Parameters
    ----------
    cls_prob : NDArray
        ``(1, 2A, H, W)``: background then foreground scores of the ``A`` anchors per cell.
    bbox_pred : NDArray
        ``(1, 4A, H, W)``: each anchor's box deltas.
    im_info : NDArray
        ``(1, 3)``: the image's height, width and scale.
    rpn_pre_nms_top_n, rpn_post_nms_top_n : int
        How many of the best go through suppression, and how many rows come out.
    threshold : float
        The IoU above which suppression removes a box.
    rpn_min_size : int
        The least width and height of a box (times the image's scale).
    scales, ratios : sequence of float
        The anchors' scales and height-over-width ratios.
    feature_stride : int
        The feature map's cell size in image pixels.
    output_score : bool
        Also return the proposals' scores.
    iou_loss : bool
        The deltas move the corners instead of the centre and size.

    Returns
    -------
    NDArray or list of NDArray
        The rois ``(rpn_post_nms_top_n, 5)``, and with ``output_score`` the scores
        ``(rpn_post_nms_top_n, 1)``.

    Raises
    ------
    MXNetError
        For shapes that do not fit the anchors, more than one image, an image bigger than the
        feature map covers, or bad attributes.
    """
    p = _params(
        "Proposal", rpn_pre_nms_top_n, rpn_post_nms_top_n, threshold, rpn_min_size, scales,
        ratios, feature_stride, output_score, iou_loss,
    )  # fmt: skip
    _check_shapes("Proposal", cls_prob, bbox_pred, im_info, p)
    return apply(_Proposal, (cls_prob, bbox_pred, im_info), p=p)


def MultiProposal(
    cls_prob: ArrayT,
    bbox_pred: ArrayT,
    im_info: ArrayT,
    rpn_pre_nms_top_n: int = 6000,
    rpn_post_nms_top_n: int = 300,
    threshold: float = 0.7,
    rpn_min_size: int = 16,
    scales: Sequence[float] = (4.0, 8.0, 16.0, 32.0),
    ratios: Sequence[float] = (0.5, 1.0, 2.0),
    feature_stride: int = 16,
    output_score: bool = False,
    iou_loss: bool = False,
) -> Any:
    """``Proposal`` for a batch of ``N`` images: each image's ``rpn_post_nms_top_n`` rows in
    turn, their first column the image's index; see :func:`Proposal` for the parameters.

    Returns
    -------
    NDArray or list of NDArray
        The rois ``(N * rpn_post_nms_top_n, 5)``, and with ``output_score`` the scores
        ``(N * rpn_post_nms_top_n, 1)``.

    Raises
    ------
    MXNetError
        For shapes that do not fit the anchors, an image bigger than the feature map covers,
        or bad attributes.
    """
    p = _params(
        "MultiProposal", rpn_pre_nms_top_n, rpn_post_nms_top_n, threshold, rpn_min_size, scales,
        ratios, feature_stride, output_score, iou_loss,
    )  # fmt: skip
    _check_shapes("MultiProposal", cls_prob, bbox_pred, im_info, p)
    return apply(_Proposal, (cls_prob, bbox_pred, im_info), p=p)
