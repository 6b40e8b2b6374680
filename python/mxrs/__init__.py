"""mxrs: data-parallel deep-learning training with Apache MXNet 1.x's API.

Layout
------
_native
    The Rust extension (parameter-server bindings).
_role
    ``import mxrs`` in a process whose ``DMLC_ROLE`` is scheduler or server runs that role.
base
    ``MXNetError`` and its subclasses.
context
    ``Context``, ``cpu``, ``gpu``, ``current_context``, ``num_gpus``.
contrib
    ``mx.contrib.nd``: the same module as ``mx.nd.contrib`` (MXNet's contributed operators).
ndarray (``nd``)
    ``NDArray`` and the array operations, on NumPy (CPU) or CuPy (GPU).
autograd
    Recording scopes and the backward pass.
random
    Seeding and sampling, one generator per context.
recordio
    RecordIO files (``MXRecordIO``, ``MXIndexedRecordIO``) and ``pack``/``unpack`` of records.
kvstore (``kv``)
    ``create('local' | 'device' | 'dist_sync' | 'dist_device_sync' | 'dist_async')``.
optimizer
    ``Optimizer`` and the update rules (SGD, NAG, Adam, AdaGrad, RMSProp, Signum, FTRL),
    ``Updater``; ``to_spec()`` describes an optimizer to the parameter servers.
lr_scheduler
    Learning-rate schedules: ``FactorScheduler``, ``MultiFactorScheduler``, ``PolyScheduler``,
    ``CosineScheduler``.
metric
    Evaluation metrics: ``Accuracy``, ``TopKAccuracy``, ``CrossEntropy``, ``MSE``, ``Loss``,
    ``CompositeEvalMetric``...
initializer (``init``)
    Weight initializers: ``Xavier``, ``Normal``, ``Uniform``, ``Zero``, ``One``, ``Constant``,
    ``MSRAPrelu``, ...; created by name with ``create``.
name
    ``NameManager`` and ``Prefix``: the counters behind automatic block names.
symbol (``sym``)
    The symbolic API: ``Variable``, operators as graph nodes, JSON files, shape inference,
    executors (``bind``, ``simple_bind``).
attribute
    ``AttrScope``: attributes given to every symbol made inside a ``with`` block.
gluon
    Blocks, parameters, layers, losses, data loading, ``Trainer``.
image (``img``)
    Decoding, resizing and augmenting images (OpenCV, with MXNet 1.9.1's pixels),
    ``ImageIter`` and ``ImageDetIter``.
io
    Data iterators: ``NDArrayIter``, ``MNISTIter``, ``CSVIter``, ``ResizeIter``,
    ``PrefetchingIter``; ``DataBatch``, ``DataDesc``, ``DataIter``.
model
    ``FeedForward``: the older fit/predict/score API over a Gluon Block.
rnn
    Recurrent cells on the symbolic API (``LSTMCell``, ``FusedRNNCell``...), unrolled over
    sequences; ``BucketSentenceIter``; RNN checkpoints.
runtime
    ``Features()``: what this build can do (CUDA through CuPy, the dist KVStore, ...).
util
    ``np_shape``/``set_np_shape``/``is_np_shape`` (a per-thread flag), ``getenv``/``setenv``, and
    ``use_np``/``use_np_array``, which decorate but raise when called (no ``mx.np`` yet).
test_utils
    Array comparisons with dtype tolerances, random arrays, ``environment``, optimizer checks.
launcher
    ``mxrs-launch``: starts scheduler, servers and workers of a job.
"""

from . import _role

_role.run_if_scheduler()

from . import (  # noqa: E402
    _native,
    attribute,
    autograd,
    base,
    callback,
    checkpoint,
    context,
    contrib,
    gluon,
    image,
    initializer,
    io,
    kvstore,
    lr_scheduler,
    metric,
    model,
    module,
    monitor,
    name,
    ndarray,
    operator,
    optimizer,
    profiler,
    random,
    recordio,
    rnn,
    runtime,
    symbol,
    test_utils,
)
from .base import MXNetError  # noqa: E402
from .context import Context, cpu, cpu_pinned, current_context, gpu  # noqa: E402
from .contrib import amp as _amp  # noqa: E402, F401  (mx.contrib.amp, which stands on gluon)
from .util import (  # noqa: E402, F401
    is_np_array,
    is_np_shape,
    np_shape,
    set_np_shape,
    use_np,
    use_np_array,
    use_np_shape,
)

# mx.nd.Custom and mx.nd.CachedOp sit above the arrays (on custom operators, on symbol
# graphs), so they are put in from here
ndarray.Custom = operator.Custom  # type: ignore[attr-defined]
ndarray.CachedOp = symbol.cached_op.CachedOp  # type: ignore[attr-defined]
nd = ndarray
kv = kvstore
init = initializer
sym = symbol
img = image
mod = module
mon = monitor
AttrScope = attribute.AttrScope

__version__ = _native.__version__

__all__ = [
    "AttrScope",
    "Context",
    "MXNetError",
    "autograd",
    "base",
    "callback",
    "checkpoint",
    "context",
    "contrib",
    "cpu",
    "cpu_pinned",
    "current_context",
    "gluon",
    "gpu",
    "image",
    "img",
    "init",
    "initializer",
    "io",
    "kv",
    "kvstore",
    "lr_scheduler",
    "metric",
    "mod",
    "model",
    "module",
    "mon",
    "monitor",
    "name",
    "nd",
    "ndarray",
    "operator",
    "optimizer",
    "profiler",
    "random",
    "recordio",
    "rnn",
    "runtime",
    "sym",
    "symbol",
    "test_utils",
]

# A server runs only now, with all of mxrs imported (the optimizers workers send it may use any
# of it).
_role.run_if_server()
