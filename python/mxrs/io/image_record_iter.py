"""``ImageRecordIter``: batches of images decoded and augmented from a RecordIO (.rec) file.

Records are ``mx.recordio.pack_img`` records (``im2rec`` makes them). A background thread lays
out each batch and hands its records to ``preprocess_threads`` worker threads, which read,
decode (OpenCV), augment and normalise them straight into the batch; finished batches wait in
a queue of at most ``prefetch_buffer`` batches for ``next()``.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..base import MXNetError
from ..ndarray import array, load
from ..recordio import unpack
from ._image_record_aug import DefaultAugmenter, Normalizer, RecordRandom
from ._record_part import RecordPart
from .batch import DataDesc
from .dataiter import DataIter

__all__ = ["ImageRecordInt8Iter", "ImageRecordIter", "ImageRecordUInt8Iter"]

_DTYPES = {"float32": np.float32, "uint8": np.uint8, "int8": np.int8}
_SEED_MASK = (1 << 63) - 1


# ---------------------------------------------------------------------- parameter parsing
def _bool(name: str, value: Any) -> bool:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise MXNetError(f"ImageRecordIter: {name} must be a boolean, got {value!r}")
    return bool(value)


def _number(name: str, value: Any, kind: type) -> Any:
    try:
        return kind(float(value)) if kind is int and isinstance(value, str) else kind(value)
    except (TypeError, ValueError):
        raise MXNetError(
            f"ImageRecordIter: {name} must be {kind.__name__}, got {value!r}"
        ) from None


def _shape(name: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        value = [v for v in value.strip("()[] ").split(",") if v.strip()]
    try:
        shape = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise MXNetError(f"ImageRecordIter: {name} must be a shape, got {value!r}") from None
    return shape


def _path(value: Any) -> str:
    return "" if value is None else os.fspath(value)


# ---------------------------------------------------------------------- labels from a .lst
def _read_imglist(path: str, label_width: int) -> dict[int, np.ndarray]:
    """{image index: labels} of an image list (``index<TAB>label...<TAB>path`` lines)."""
    if not os.path.isfile(path):
        raise MXNetError(f"ImageRecordIter: path_imglist {path} does not exist")
    labels = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < label_width + 1:
                raise MXNetError(
                    f"ImageRecordIter: line {n} of {path} has fewer than label_width="
                    f"{label_width} labels"
                )
            try:
                labels[int(float(fields[0]))] = np.asarray(
                    [float(v) for v in fields[1 : 1 + label_width]], dtype=np.float32
                )
            except ValueError:
                raise MXNetError(f"ImageRecordIter: line {n} of {path} is malformed") from None
    return labels


# ---------------------------------------------------------------------- the epoch plan
class _Plan:
    """Which records fill which batch slots, epoch after epoch.

    The records are read in passes over the part, each pass in file order or (``shuffle``) in
    a permutation drawn from ``seed`` and the pass number. An epoch reads from where the last
    ended to the end of a pass. A last batch the records do not fill is, with ``round_batch``,
    completed from the next pass (``pad`` counts those records) and the next epoch starts after
    them; without ``round_batch`` its empty slots are zeros (``pad`` counts them too).
    """

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed: int, round_batch: bool):
        self.n, self.batch_size = n, batch_size
        self.shuffle, self.seed, self.round_batch = shuffle, seed, round_batch
        self.next_pass, self.next_offset = 0, 0

    def _order(self, pass_no: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(self.n)
        rng = np.random.default_rng([self.seed & _SEED_MASK, pass_no])
        return rng.permutation(self.n)

    def epoch(self) -> tuple[list[tuple[list[tuple[int, int] | None], int]], tuple[int, int]]:
        """The batches of the next epoch, each ``(slots, pad)`` with a slot ``(pass, record)``
        or ``None`` (padding), and where the epoch after it starts once the last batch is
        delivered. The epoch after one left early starts a new pass."""
        pass_no, offset = self.next_pass, self.next_offset
        self.next_pass, self.next_offset = pass_no + 1, 0
        if self.n == 0:
            return [], (pass_no + 1, 0)
        order = self._order(pass_no)
        slots: list[tuple[int, int] | None] = [(pass_no, int(r)) for r in order[offset:]]
        batches = []
        for start in range(0, len(slots), self.batch_size):
            batches.append((slots[start : start + self.batch_size], 0))
        after = (pass_no + 1, 0)
        if batches and len(batches[-1][0]) < self.batch_size:
            last = list(batches[-1][0])
            pad = self.batch_size - len(last)
            if self.round_batch:
                fill_pass, used = pass_no + 1, 0
                fill_order = self._order(fill_pass)
                while len(last) < self.batch_size:
                    if used == self.n:
                        fill_pass, used = fill_pass + 1, 0
                        fill_order = self._order(fill_pass)
                    last.append((fill_pass, int(fill_order[used])))
                    used += 1
                after = (fill_pass, used) if used < self.n else (fill_pass + 1, 0)
            else:
                last.extend([None] * pad)
            batches[-1] = (last, pad)
        return batches, after


# ---------------------------------------------------------------------- the workers
class _Pipeline:
    """Reads, decodes, augments and normalises one record into a batch slot (what the
    worker threads run). Holds nothing of the iterator, so the iterator can be dropped while
    the threads live."""

    def __init__(
        self,
        part: RecordPart,
        channels: int,
        label_width: int,
        imglist: dict[int, np.ndarray] | None,
        augment: DefaultAugmenter,
        normalize: Normalizer,
        seed: int,
        seed_aug: int | None,
    ) -> None:
        self.part = part
        self.channels = channels
        self.label_width = label_width
        self.imglist = imglist
        self.augment = augment
        self.normalize = normalize
        self.seed = seed
        self.seed_aug = seed_aug

    def rng(self, pass_no: int, record: int) -> RecordRandom:
        """The random numbers of one record's augmentation: fixed per record with
        ``seed_aug``, else drawn from ``seed``, the pass and the record."""
        if self.seed_aug is not None:
            return RecordRandom(((self.seed_aug & _SEED_MASK) << 96) | (1 << 95) | record)
        return RecordRandom(((self.seed & _SEED_MASK) << 96) | (pass_no << 48) | record)

    def decode(self, record: int) -> tuple[Any, np.ndarray]:
        """The header and the decoded (BGR(A)/gray) image of record ``record`` of the part."""
        import cv2

        offset = int(self.part.offsets[record])
        header, payload = unpack(self.part.read(offset))
        flag = {1: cv2.IMREAD_GRAYSCALE, 3: cv2.IMREAD_COLOR, 4: cv2.IMREAD_UNCHANGED}
        img = cv2.imdecode(np.frombuffer(payload, dtype=np.uint8), flag[self.channels])
        if img is None:
            raise MXNetError(f"cannot decode the image of record id {header.id}")
        if self.channels == 4 and (img.ndim != 3 or img.shape[2] != 4):
            got = 1 if img.ndim == 2 else img.shape[2]
            raise MXNetError(
                f"Invalid image with index {header.id}. Expected 4 channels, got {got}"
            )
        return header, img

    def label(self, header: Any) -> np.ndarray:
        """The labels of a record: from the image list, or from its header."""
        if self.imglist is not None:
            try:
                return self.imglist[int(header.id)]
            except KeyError:
                raise MXNetError(f"fail to find imagelabel for id {header.id}") from None
        if isinstance(header.label, np.ndarray):
            if header.label.size != self.label_width:
                raise MXNetError(
                    f"rec file provide {header.label.size}-dimensional label but label_width "
                    f"is set to {self.label_width}"
                )
            return header.label
        if self.label_width != 1:
            raise MXNetError(
                "label_width must be 1 unless an imglist is provided or the rec file is "
                "packed with multi dimensional label"
            )
        return np.asarray([header.label], dtype=np.float32)

    def sample(self, pass_no: int, record: int, out: np.ndarray) -> tuple[np.ndarray, int]:
        """Write record ``record``'s image into ``out``; returns its labels and id."""
        header, img = self.decode(record)
        labels = self.label(header)
        rng = self.rng(pass_no, record)
        self.normalize(self.augment(img, rng), rng, out)
        return labels, int(header.id)

    def fill(
        self,
        slot: int,
        where: tuple[int, int] | None,
        data: np.ndarray,
        label: np.ndarray,
        index: np.ndarray,
    ) -> None:
        """Fill batch slot ``slot`` with record ``where`` = (pass, record), or zeros."""
        if where is None:
            data[slot] = 0
            label[slot] = 0
            index[slot] = 0
            return
        try:
            labels, rec_id = self.sample(where[0], where[1], data[slot])
        except Exception as err:  # noqa: BLE001 (OpenCV's and NumPy's too, named with the record)
            what = str(err) if isinstance(err, MXNetError) else f"{type(err).__name__}: {err}"
            raise MXNetError(
                f"record {where[1]} (at byte {self.part.offsets[where[1]]}) of "
                f"{self.part.path}: {what}"
            ) from err
        label[slot] = labels.reshape(label[slot].shape)
        index[slot] = rec_id


class _Producer:
    """The thread that makes one epoch's batches and queues them (at most ``capacity``)."""

    _END = object()

    def __init__(
        self,
        batches: list[tuple[list[tuple[int, int] | None], int]],
        pipeline: _Pipeline,
        pool: ThreadPoolExecutor,
        threads: int,
        shapes: tuple[tuple[int, ...], tuple[int, ...]],
        dtype: Any,
        capacity: int,
    ) -> None:
        self.batches = batches
        self.pipeline = pipeline
        self.pool = pool
        self.threads = threads
        self.shapes = shapes
        self.dtype = dtype
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=capacity)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="mxrs-image-record", daemon=True)
        self.thread.start()

    def _submit(self, slots: list[tuple[int, int] | None], pad: int) -> tuple[Any, ...]:
        batch = len(slots)
        data = np.empty((batch, *self.shapes[0]), dtype=self.dtype)
        label = np.empty((batch, *self.shapes[1]), dtype=np.float32)
        index = np.zeros(batch, dtype=np.uint64)
        step = max(1, -(-batch // (4 * self.threads)))  # a few jobs per thread
        jobs = [
            self.pool.submit(self._fill, range(k, min(k + step, batch)), slots, data, label, index)
            for k in range(0, batch, step)
        ]
        return data, label, index, pad, jobs

    def _fill(self, ks: range, slots: list[Any], *arrays: np.ndarray) -> None:
        for k in ks:
            self.pipeline.fill(k, slots[k], *arrays)

    def _run(self) -> None:
        try:
            in_flight: deque[tuple[Any, ...]] = deque()
            todo = iter(self.batches)
            # batches in the works: two, or enough to keep every thread busy when small
            batch = len(self.batches[0][0]) if self.batches else 1
            for _ in range(max(2, min(64, -(-8 * self.threads // batch)))):
                nxt = next(todo, None)
                if nxt is not None:
                    in_flight.append(self._submit(*nxt))
            while in_flight:
                data, label, index, pad, jobs = in_flight.popleft()
                try:
                    for job in jobs:
                        job.result()
                except BaseException:
                    _cancel(jobs, in_flight)
                    raise
                if not self._put((data, label, index, pad)):
                    _cancel([], in_flight)
                    return
                nxt = next(todo, None)
                if nxt is not None:
                    in_flight.append(self._submit(*nxt))
            self._put(self._END)
        except BaseException as err:  # handed to the consumer by ``get``
            _cancel([], in_flight)
            self._put(err)

    def _put(self, item: Any) -> bool:
        if self.stopping.is_set():
            return False
        self.queue.put(item)
        return True

    def get(self) -> Any:
        """The next batch, ``_END``, or the exception that stopped the thread."""
        return self.queue.get()

    def stop(self) -> None:
        """Stop the thread (after the record jobs under way) and wait for it.

        Once ``stopping`` is set the thread puts at most one more item (one whose put had
        begun), which fits in the emptied queue, so the join cannot wait for ever."""
        self.stopping.set()
        try:
            while True:
                self.queue.get_nowait()
        except queue.Empty:
            pass
        if self.thread is not threading.current_thread():
            self.thread.join()


def _cancel(jobs: list[Future[Any]], in_flight: deque[tuple[Any, ...]]) -> None:
    for job in jobs:
        job.cancel()
    for *_, pending in in_flight:
        for job in pending:
            job.cancel()
    for *_, pending in in_flight:
        for job in pending:
            if not job.cancelled():
                job.exception()  # wait for it: its batch arrays are not used any more
    in_flight.clear()


def _shutdown(state: dict[str, Any]) -> None:
    producer = state.get("producer")
    if producer is not None:
        producer.stop()
        state["producer"] = None
    pool = state.get("pool")
    if pool is not None:
        # a worker cannot wait for itself (the collector may run this on any thread)
        own = threading.current_thread().name.startswith("mxrs-image")
        pool.shutdown(wait=not own, cancel_futures=True)
        state["pool"] = None
    part = state.get("part")
    if part is not None:
        part.close()
        state["part"] = None


# ---------------------------------------------------------------------- the iterator
class ImageRecordIter(DataIter):
    """Iterates over the images of a RecordIO (.rec) file in batches, decoding and augmenting
    them on background threads, as MXNet 1.9.1's ``ImageRecordIter`` does.

    Each image is decoded with OpenCV (``data_shape[0]`` of 1: grayscale, 3: color, 4: with
    alpha), augmented (``resize``, affine transform, ``pad``, crop to ``data_shape``, color
    jitter...; see the parameters), mirrored, normalised and laid out as RGB(A)
    ``(channels, height, width)``. Without random augmentation the crop is the center one.

    Parameters (keyword only)
    -------------------------
    path_imgrec : str
        The .rec file.
    data_shape : tuple of int
        ``(channels, height, width)`` of an output image; channels 1, 3 or 4.
    batch_size : int
    path_imglist : str, optional
        An image list (``index<TAB>labels...<TAB>path``) whose labels replace the records'.
    path_imgidx : str, optional
        The .idx file; the part of a worker is then cut by record counts.
    label_width : int, default 1
        Labels per image; the label batch is ``(batch,)`` for 1, else ``(batch, label_width)``.
    shuffle : bool, default False
        Read the records in a new random order each pass (from ``seed``).
    seed : int, default 0
        Seed of the shuffling and of the random augmentations.
    seed_aug : int, optional
        With it, each record gets the same random augmentation every epoch.
    round_batch : bool, default True
        Complete the last batch from the start of the next pass (``pad`` counts the records
        taken; the next epoch starts after them). Without it, the slots left are zeros,
        counted by ``pad``.
    part_index, num_parts : int, default 0 and 1
        Read only part ``part_index`` of ``num_parts`` (a distributed worker's share).
    resize : int, default -1
        Resize the shorter edge to this before the other augmentations.
    rand_crop, rand_mirror, mirror : bool, default False
        Random crop position (else center), random horizontal flip, flip always.
    random_resized_crop : bool, default False
        Crop a random area (``min_random_area``-``max_random_area`` of the image) and aspect
        ratio, resized to ``data_shape``.
    max_random_area, min_random_area : float, default 1
    max_rotate_angle : int, default 0; rotate : int, default -1
        Rotate by a random angle in ``[-max_rotate_angle, max_rotate_angle]``, or by ``rotate``.
    max_aspect_ratio : float, default 0; min_aspect_ratio : float, optional
        Aspect ratio drawn from ``[min_aspect_ratio, max_aspect_ratio]``, or
        ``1 ± max_aspect_ratio`` without ``min_aspect_ratio``.
    max_shear_ratio : float, default 0
    max_random_scale, min_random_scale : float, default 1
    max_crop_size, min_crop_size : int, default -1
        Crop a random square of a size in this range, resized to ``data_shape``.
    max_img_size, min_img_size : float
        Limits of the size after the affine transform.
    brightness, contrast, saturation : float, default 0
        Random jitter factors ``1 ± value``.
    pca_noise : float, default 0
        Standard deviation of AlexNet-style PCA lighting noise.
    random_h, random_s, random_l : int, default 0
        Random shifts in HLS space.
    fill_value : int, default 255
        The value of pixels the transform or ``pad`` adds.
    inter_method : int, default 1
        Interpolation: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 auto, 10 random.
    pad : int, default 0
        Pixels added around the image before cropping.
    mean_r, mean_g, mean_b, mean_a : float, default 0
    std_r, std_g, std_b, std_a : float, default 1
    scale : float, default 1
        Output ``(pixel - mean) * scale / std`` (float32).
    mean_img : str, optional
        A file (``mx.nd.save``, one ``(C, H, W)`` array) of the mean image to subtract instead
        of ``mean_r/g/b/a``; computed over the data and saved there when it does not exist.
    max_random_contrast, max_random_illumination : float, default 0
    preprocess_threads : int, default 4
        Threads that decode and augment.
    prefetch_buffer : int, default 4
        Finished batches kept ready at most.
    dtype : str, optional
        ``'float32'`` (default), ``'uint8'`` (raw pixels) or ``'int8'`` (pixels minus mean).
    data_name, label_name : str, default 'data' and 'softmax_label'

    Other keyword arguments (``verbose``, ``ctx``, ``device_id``, ``shuffle_chunk_size``...)
    are accepted and ignored, as MXNet ignores those its image pipeline does not use.

    Raises
    ------
    MXNetError
        For missing or bad parameters and files at construction; for a record that cannot be
        decoded or labelled at the ``next()`` that would return it (the message names the
        record and file).
    """

    _one_array = True

    def __init__(
        self,
        *,
        path_imgrec: Any = "",
        data_shape: Any = None,
        batch_size: Any = None,
        path_imglist: Any = "",
        path_imgidx: Any = "",
        aug_seq: str = "aug_default",
        label_width: int = 1,
        preprocess_threads: int = 4,
        num_parts: int = 1,
        part_index: int = 0,
        seed_aug: Any = None,
        shuffle: bool = False,
        seed: int = 0,
        round_batch: bool = True,
        prefetch_buffer: int = 4,
        dtype: Any = None,
        resize: int = -1,
        rand_crop: bool = False,
        random_resized_crop: bool = False,
        max_rotate_angle: int = 0,
        max_aspect_ratio: float = 0.0,
        min_aspect_ratio: Any = None,
        max_shear_ratio: float = 0.0,
        max_crop_size: int = -1,
        min_crop_size: int = -1,
        max_random_scale: float = 1.0,
        min_random_scale: float = 1.0,
        max_random_area: float = 1.0,
        min_random_area: float = 1.0,
        max_img_size: float = 1e10,
        min_img_size: float = 0.0,
        brightness: float = 0.0,
        contrast: float = 0.0,
        saturation: float = 0.0,
        pca_noise: float = 0.0,
        random_h: int = 0,
        random_s: int = 0,
        random_l: int = 0,
        rotate: int = -1,
        fill_value: int = 255,
        inter_method: int = 1,
        pad: int = 0,
        mirror: bool = False,
        rand_mirror: bool = False,
        mean_img: Any = "",
        mean_r: float = 0.0,
        mean_g: float = 0.0,
        mean_b: float = 0.0,
        mean_a: float = 0.0,
        std_r: float = 1.0,
        std_g: float = 1.0,
        std_b: float = 1.0,
        std_a: float = 1.0,
        scale: float = 1.0,
        max_random_contrast: float = 0.0,
        max_random_illumination: float = 0.0,
        data_name: str = "data",
        label_name: str = "softmax_label",
        **kwargs: Any,
    ) -> None:
        if data_shape is None:
            raise MXNetError("Required parameter data_shape of Shape(tuple) is not presented")
        if batch_size is None:
            raise MXNetError("Required parameter batch_size of int (non-negative) is not presented")
        shape = _shape("data_shape", data_shape)
        if len(shape) != 3 or min(shape) <= 0:
            raise MXNetError(
                f"ImageRecordIter: data_shape must be (channels, height, width), all positive, "
                f"got {data_shape}"
            )
        if shape[0] not in (1, 3, 4):
            raise MXNetError(
                f"ImageRecordIter: Invalid output shape {list(shape)}: channels must be 1, 3 or 4"
            )
        batch = _number("batch_size", batch_size, int)
        if batch <= 0:
            raise MXNetError(f"ImageRecordIter: batch_size must be positive, got {batch_size}")
        super().__init__(batch)
        rec_path = _path(path_imgrec)
        if not rec_path:
            raise MXNetError("ImageRecordIter: path_imgrec must be given (the .rec file)")
        if aug_seq != "aug_default":
            raise MXNetError(f"ImageRecordIter: unknown augmenter {aug_seq!r} (only 'aug_default')")
        width = _number("label_width", label_width, int)
        if width < 1:
            raise MXNetError(f"ImageRecordIter: label_width must be at least 1, got {label_width}")
        parts, part = _number("num_parts", num_parts, int), _number("part_index", part_index, int)
        if parts < 1 or not 0 <= part < parts:
            raise MXNetError(
                f"ImageRecordIter: part_index {part_index} is outside [0, num_parts={num_parts})"
            )
        threads = _number("preprocess_threads", preprocess_threads, int)
        buffer = _number("prefetch_buffer", prefetch_buffer, int)
        if threads < 1 or buffer < 1:
            raise MXNetError(
                "ImageRecordIter: preprocess_threads and prefetch_buffer must be at least 1, got "
                f"{preprocess_threads} and {prefetch_buffer}"
            )
        dtype_name = "float32" if dtype is None else str(np.dtype(dtype).name)
        if dtype_name not in _DTYPES:
            raise MXNetError(f"ImageRecordIter: unknown dtype {dtype!r}: float32, uint8 or int8")
        self.dtype = _DTYPES[dtype_name]
        self.data_shape = shape
        self.label_width = width
        self.data_name, self.label_name = data_name, label_name
        self.round_batch = _bool("round_batch", round_batch)

        augment = DefaultAugmenter(
            shape,
            resize=_number("resize", resize, int),
            rand_crop=_bool("rand_crop", rand_crop),
            random_resized_crop=_bool("random_resized_crop", random_resized_crop),
            max_rotate_angle=_number("max_rotate_angle", max_rotate_angle, int),
            max_aspect_ratio=_number("max_aspect_ratio", max_aspect_ratio, float),
            min_aspect_ratio=(
                None
                if min_aspect_ratio is None or min_aspect_ratio == "None"
                else _number("min_aspect_ratio", min_aspect_ratio, float)
            ),
            max_shear_ratio=_number("max_shear_ratio", max_shear_ratio, float),
            max_crop_size=_number("max_crop_size", max_crop_size, int),
            min_crop_size=_number("min_crop_size", min_crop_size, int),
            max_random_scale=_number("max_random_scale", max_random_scale, float),
            min_random_scale=_number("min_random_scale", min_random_scale, float),
            max_random_area=_number("max_random_area", max_random_area, float),
            min_random_area=_number("min_random_area", min_random_area, float),
            max_img_size=_number("max_img_size", max_img_size, float),
            min_img_size=_number("min_img_size", min_img_size, float),
            brightness=_number("brightness", brightness, float),
            contrast=_number("contrast", contrast, float),
            saturation=_number("saturation", saturation, float),
            pca_noise=_number("pca_noise", pca_noise, float),
            random_h=_number("random_h", random_h, int),
            random_s=_number("random_s", random_s, int),
            random_l=_number("random_l", random_l, int),
            rotate=_number("rotate", rotate, int),
            fill_value=_number("fill_value", fill_value, int),
            inter_method=_number("inter_method", inter_method, int),
            pad=_number("pad", pad, int),
            rotate_list=_rotate_list(kwargs.get("rotate_list")),
        )
        normalize = Normalizer(
            self.dtype,
            shape[0],
            mean=[
                _number(n, v, float)
                for n, v in (
                    ("mean_r", mean_r),
                    ("mean_g", mean_g),
                    ("mean_b", mean_b),
                    ("mean_a", mean_a),
                )
            ],
            std=[
                _number(n, v, float)
                for n, v in (("std_r", std_r), ("std_g", std_g), ("std_b", std_b), ("std_a", std_a))
            ],
            scale=_number("scale", scale, float),
            mirror=_bool("mirror", mirror),
            rand_mirror=_bool("rand_mirror", rand_mirror),
            max_random_contrast=_number("max_random_contrast", max_random_contrast, float),
            max_random_illumination=_number(
                "max_random_illumination", max_random_illumination, float
            ),
        )
        imglist_path = _path(path_imglist)
        imglist = _read_imglist(imglist_path, width) if imglist_path else None
        seed_value = _number("seed", seed, int)
        aug_seed = (
            None if seed_aug is None or seed_aug == "None" else _number("seed_aug", seed_aug, int)
        )

        part_reader = RecordPart(rec_path, _path(path_imgidx) or None, part, parts)
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mxrs-image-decode")
        self._state: dict[str, Any] = {"producer": None, "pool": pool, "part": part_reader}
        self._finalizer = weakref.finalize(self, _shutdown, self._state)
        self._pipeline = _Pipeline(
            part_reader, shape[0], width, imglist, augment, normalize, seed_value, aug_seed
        )
        self._capacity = buffer
        self._threads = threads
        self._plan = _Plan(
            len(part_reader), batch, _bool("shuffle", shuffle), seed_value, self.round_batch
        )
        mean_path = _path(mean_img)
        if mean_path and self.dtype != np.uint8:
            normalize.mean_img = self._mean_image(mean_path)
        self._current: tuple[Any, ...] | None = None
        self._error: BaseException | None = None
        self._after: tuple[int, int] = (0, 0)
        self._remaining = 0
        self._start_epoch()

    # ------------------------------------------------------------------ mean image
    def _mean_image(self, path: str) -> np.ndarray:
        """The mean image of ``path``, or, when there is no such file, the mean over the
        records of the images this iterator makes, saved to ``path``."""
        from ..ndarray import save

        if os.path.exists(path):
            try:
                loaded = load(path)
            except Exception as err:  # noqa: BLE001 (any unreadable file is reported alike)
                raise MXNetError(
                    f"ImageRecordIter: cannot read the mean image {path}: {err}"
                ) from err
            arrays = list(loaded.values()) if isinstance(loaded, dict) else list(loaded)
            if len(arrays) != 1:
                raise MXNetError(
                    f"ImageRecordIter: Invalid mean image file format: {path} holds "
                    f"{len(arrays)} arrays, not 1"
                )
            mean = np.asarray(arrays[0].asnumpy(), dtype=np.float32)
            if mean.shape != self.data_shape:
                raise MXNetError(
                    f"ImageRecordIter: the mean image of {path} is {mean.shape}, data_shape "
                    f"is {self.data_shape}"
                )
            return mean
        pipeline = self._pipeline
        n = len(pipeline.part)
        if n == 0:
            raise MXNetError(f"ImageRecordIter: no records to compute the mean image {path} from")
        total = np.zeros(self.data_shape, dtype=np.float32)
        chunk = 64
        out = np.empty((chunk, *self.data_shape), dtype=np.float32)
        pool = self._state["pool"]
        for start in range(0, n, chunk):
            count = min(chunk, n - start)
            jobs = [pool.submit(pipeline.sample, 0, start + k, out[k]) for k in range(count)]
            for job in jobs:
                job.result()
            for k in range(count):
                total += out[k]
        mean = total * np.float32(1.0 / n)
        save(path, {"mean_img": array(mean)})
        return mean

    # ------------------------------------------------------------------ descriptions
    @property
    def provide_data(self) -> list[DataDesc]:
        """The data batch: ``(batch_size, channels, height, width)``."""
        return [DataDesc(self.data_name, (self.batch_size, *self.data_shape), self.dtype)]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The label batch: ``(batch_size,)``, or ``(batch_size, label_width)``."""
        return [DataDesc(self.label_name, (self.batch_size, *self._label_shape()), np.float32)]

    def _label_shape(self) -> tuple[int, ...]:
        return () if self.label_width == 1 else (self.label_width,)

    # ------------------------------------------------------------------ epochs
    def _start_epoch(self) -> None:
        batches, self._after = self._plan.epoch()
        self._remaining = len(batches)
        self._error = None
        self._state["producer"] = _Producer(
            batches,
            self._pipeline,
            self._state["pool"],
            self._threads,
            (self.data_shape, self._label_shape()),
            self.dtype,
            self._capacity,
        )

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise MXNetError("ImageRecordIter: the iterator is closed")

    def reset(self) -> None:
        """Start the next epoch (stopping the reading ahead of this one)."""
        self._check_open()
        producer = self._state["producer"]
        if producer is not None:
            producer.stop()
            self._state["producer"] = None
        self._current = None
        self._start_epoch()

    def close(self) -> None:
        """Stop the background threads and close the file; the iterator is unusable after."""
        self._finalizer()

    def __enter__(self) -> ImageRecordIter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def iter_next(self) -> bool:
        """Move to the next batch; ``False`` at the end of the epoch. Raises ``MXNetError``
        when decoding or augmenting a record of the batch failed."""
        self._check_open()
        if self._error is not None:
            raise MXNetError(f"ImageRecordIter: {self._error}") from self._error
        if self._remaining == 0:
            return False
        item = self._state["producer"].get()
        if isinstance(item, BaseException):
            self._error = item
            raise MXNetError(f"ImageRecordIter: preprocessing failed: {item}") from item
        if item is _Producer._END:
            self._remaining = 0
            return False
        self._current = item
        self._remaining -= 1
        if self._remaining == 0:
            self._plan.next_pass, self._plan.next_offset = self._after
        return True

    def _batch(self) -> tuple[Any, ...]:
        if self._current is None:
            raise MXNetError("ImageRecordIter: no current batch; call next() first")
        return self._current

    def getdata(self) -> Any:
        """The images of the current batch: one NDArray ``(batch, C, H, W)``."""
        return array(self._batch()[0], dtype=self.dtype)

    def getlabel(self) -> Any:
        """The labels of the current batch: one NDArray."""
        return array(self._batch()[1], dtype=np.float32)

    def getindex(self) -> np.ndarray:
        """The record ids (header ``id``) of the current batch's images (0 for padding)."""
        return self._batch()[2]

    def getpad(self) -> int:
        """Slots at the end of the batch that repeat records or are empty."""
        return int(self._batch()[3])


def _rotate_list(value: Any) -> list[int]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [int(v) for v in value.split(",") if v.strip()]
    return [int(v) for v in value]


def ImageRecordUInt8Iter(**kwargs: Any) -> ImageRecordIter:  # noqa: N802 (MXNet's name)
    """``ImageRecordIter`` with ``dtype='uint8'``: the raw RGB pixels (deprecated in MXNet
    1.9.1 in favour of ``ImageRecordIter(dtype='uint8')``)."""
    kwargs["dtype"] = "uint8"
    return ImageRecordIter(**kwargs)


def ImageRecordInt8Iter(**kwargs: Any) -> ImageRecordIter:  # noqa: N802 (MXNet's name)
    """``ImageRecordIter`` with ``dtype='int8'``: pixels minus the rounded mean, saturated
    (deprecated in MXNet 1.9.1 in favour of ``ImageRecordIter(dtype='int8')``)."""
    kwargs["dtype"] = "int8"
    return ImageRecordIter(**kwargs)
