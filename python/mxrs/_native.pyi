"""Type stubs of the Rust extension ``mxrs._native`` (the parameter-server bindings)."""

from collections.abc import Sequence

import numpy as np

__version__: str

class Ticket:
    """A pending push, pull or init."""

    @property
    def done(self) -> bool: ...
    def wait(self) -> None: ...

class Worker:
    """A worker of a parameter-server job, configured by the ``DMLC_*`` environment."""

    def __init__(self, mode: str) -> None: ...
    @property
    def rank(self) -> int: ...
    @property
    def num_workers(self) -> int: ...
    @property
    def num_servers(self) -> int: ...
    def init(self, keys: Sequence[int], arrays: Sequence[np.ndarray]) -> Ticket: ...
    def push(
        self,
        keys: Sequence[int],
        arrays: Sequence[np.ndarray],
        compression: tuple[str, float] | None = None,
        priority: int = 0,
    ) -> Ticket: ...
    def pull(
        self,
        keys: Sequence[int],
        outs: Sequence[np.ndarray],
        priority: int = 0,
        compression: tuple[str, float] | None = None,
    ) -> Ticket: ...
    def set_pull_weights(self, on: bool) -> None: ...
    def pushpull(
        self,
        keys: Sequence[int],
        arrays: Sequence[np.ndarray],
        outs: Sequence[np.ndarray],
        compression: tuple[str, float] | None = None,
        priority: int = 0,
    ) -> Ticket: ...
    def init_rows(self, keys: Sequence[int], arrays: Sequence[np.ndarray]) -> Ticket: ...
    def push_rows(
        self,
        keys: Sequence[int],
        row_ids: Sequence[np.ndarray],
        values: Sequence[np.ndarray],
        priority: int = 0,
        compression: tuple[str, float] | None = None,
    ) -> Ticket: ...
    def pull_rows(
        self,
        keys: Sequence[int],
        row_ids: Sequence[np.ndarray],
        outs: Sequence[np.ndarray],
        priority: int = 0,
    ) -> Ticket: ...
    def barrier(self, group: str = "workers") -> None: ...
    def finish(self) -> None: ...
    def set_optimizer(
        self,
        name: str,
        params: Sequence[tuple[str, float]],
        key_mults: Sequence[tuple[int, float, float]] = ...,
        payload: bytes | None = ...,
    ) -> None: ...
    def set_params(
        self,
        params: Sequence[tuple[str, float]],
        key_mults: Sequence[tuple[int, float, float]] = ...,
    ) -> None: ...
    @property
    def rejoined(self) -> bool: ...
    def rounds(self, key: int) -> int: ...
    def resume_at(self, round: int) -> None: ...
    def save_states(self) -> bytes: ...
    def load_states(self, blob: bytes) -> None: ...
    def server_stats(self) -> list[dict[str, int]]: ...

def run_role(role: str) -> int: ...
def exit_with_status(status: int) -> None: ...
def compress_roundtrip(
    kind: str, threshold: float, grad: np.ndarray, residual: np.ndarray | None = None
) -> np.ndarray: ...
def node_main(role: str, argv: Sequence[str]) -> int: ...
def tls_job_certificates(
    job: str, nodes: Sequence[str], seconds: float, hosts: Sequence[str] = ...
) -> tuple[str, list[tuple[str, str]]]: ...
def sgd_update(
    weight: np.ndarray,
    grad: np.ndarray,
    mom: np.ndarray | None,
    lr: float,
    wd: float,
    momentum: float,
    rescale_grad: float,
    clip_gradient: float | None = None,
) -> None: ...
def copy_into(dst: np.ndarray, src: np.ndarray) -> None: ...
def add_into(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None: ...

# ReLU's native loops (mxrs.kernels.onednn): dense float32 arrays of one layout, NaN kept;
# split over oneDNN's OpenMP threads when it is loaded.
def relu_forward(x: np.ndarray, y: np.ndarray) -> None: ...
def relu_add_forward(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None: ...
def relu_backward(y: np.ndarray, gy: np.ndarray, gx: np.ndarray) -> None: ...
def relu_backward_sum(y: np.ndarray, gy1: np.ndarray, gy2: np.ndarray, gx: np.ndarray) -> None: ...

# NumPy's memory handler staggering large host arrays (mxrs._backend).
def stagger_host_arrays() -> str: ...

# oneDNN's kernels (mxrs.kernels.onednn): float32, C-contiguous arrays; KernelError on misuse,
# KernelUnsupportedError where oneDNN has no implementation.
def onednn_load(path: str) -> str: ...
def onednn_set_threads(n: int) -> None: ...

class OnednnConv:
    def __init__(
        self,
        src: Sequence[int],
        weights: Sequence[int],
        groups: int,
        bias: bool,
        stride: Sequence[int],
        dilate: Sequence[int],
        pad: Sequence[int],
        training: bool,
        adj: Sequence[int] | None = None,
        winograd: str = "auto",
    ) -> None: ...
    @property
    def dst_shape(self) -> list[int]: ...
    @property
    def implementation(self) -> str: ...
    def forward(
        self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, y: np.ndarray
    ) -> None: ...
    def backward(
        self,
        x: np.ndarray,
        w: np.ndarray,
        gy: np.ndarray,
        gx: np.ndarray | None,
        gw: np.ndarray | None,
        gb: np.ndarray | None,
    ) -> None: ...

class OnednnPool:
    def __init__(
        self,
        src: Sequence[int],
        src_strides: Sequence[int],
        kind: str,
        kernel: Sequence[int],
        stride: Sequence[int],
        pad_l: Sequence[int],
        pad_r: Sequence[int],
        training: bool,
    ) -> None: ...
    @property
    def dst_shape(self) -> list[int]: ...
    @property
    def implementation(self) -> str: ...
    @property
    def workspace_bytes(self) -> int: ...
    def forward(self, x: np.ndarray, y: np.ndarray, ws: np.ndarray | None) -> None: ...
    def backward(self, gy: np.ndarray, ws: np.ndarray | None, gx: np.ndarray) -> None: ...

class OnednnBatchNorm:
    def __init__(
        self,
        shape: Sequence[int],
        strides: Sequence[int],
        eps: float,
        use_global: bool,
        training: bool,
        relu: bool = False,
    ) -> None: ...
    @property
    def implementation(self) -> str: ...
    @property
    def workspace_bytes(self) -> int: ...
    def forward(
        self,
        x: np.ndarray,
        scale: np.ndarray,
        shift: np.ndarray,
        mean: np.ndarray,
        var: np.ndarray,
        y: np.ndarray,
        ws: np.ndarray | None = None,
    ) -> None: ...
    def backward(
        self,
        x: np.ndarray,
        gy: np.ndarray,
        scale: np.ndarray,
        mean: np.ndarray,
        var: np.ndarray,
        gx: np.ndarray,
        gscale: np.ndarray,
        gshift: np.ndarray,
        ws: np.ndarray | None = None,
        shift: np.ndarray | None = None,
    ) -> None: ...
    def forward_residual(
        self,
        x: np.ndarray,
        residual: np.ndarray,
        scale: np.ndarray,
        shift: np.ndarray,
        mean: np.ndarray,
        var: np.ndarray,
        y: np.ndarray,
    ) -> None: ...
    def backward_residual(
        self,
        x: np.ndarray,
        y: np.ndarray,
        gy: np.ndarray,
        gy2: np.ndarray | None,
        scale: np.ndarray,
        mean: np.ndarray,
        var: np.ndarray,
        gx: np.ndarray,
        gr: np.ndarray,
        gscale: np.ndarray,
        gshift: np.ndarray,
    ) -> None: ...

class OnednnActivation:
    def __init__(self, kind: str, len: int, training: bool, slope: float = 0.0) -> None: ...
    @property
    def implementation(self) -> str: ...
    def forward(self, x: np.ndarray, y: np.ndarray) -> None: ...
    def backward(self, data: np.ndarray, gy: np.ndarray, gx: np.ndarray) -> None: ...

class OnednnSoftmax:
    def __init__(
        self, shape: Sequence[int], strides: Sequence[int], axis: int, log: bool, training: bool
    ) -> None: ...
    @property
    def implementation(self) -> str: ...
    def forward(self, x: np.ndarray, y: np.ndarray) -> None: ...
    def backward(self, y: np.ndarray, gy: np.ndarray, gx: np.ndarray) -> None: ...

class OnednnLrn:
    def __init__(
        self, shape: Sequence[int], size: int, alpha: float, beta: float, k: float, training: bool
    ) -> None: ...
    @property
    def implementation(self) -> str: ...
    @property
    def workspace_bytes(self) -> int: ...
    def forward(self, x: np.ndarray, y: np.ndarray, ws: np.ndarray | None) -> None: ...
    def backward(
        self, x: np.ndarray, gy: np.ndarray, ws: np.ndarray | None, gx: np.ndarray
    ) -> None: ...

class OnednnInnerProduct:
    def __init__(
        self, batch: int, inputs: int, outputs: int, bias: bool, training: bool
    ) -> None: ...
    @property
    def implementation(self) -> str: ...
    def forward(
        self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, y: np.ndarray
    ) -> None: ...
    def backward(
        self,
        x: np.ndarray,
        w: np.ndarray,
        gy: np.ndarray,
        gx: np.ndarray | None,
        gw: np.ndarray | None,
        gb: np.ndarray | None,
    ) -> None: ...
