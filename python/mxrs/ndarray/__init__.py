"""Arrays on devices and the operations on them (``mx.nd``).

Layout
------
Three layers, each importing only the ones below it (``tests/test_import_graph.py`` checks it).

**The core** (``core/``), below every op:

core.array
    ``ArrayCore``, the slots and read-only attributes of an NDArray, and ``ArrayT``, the type
    the op modules give their operands and results.
core.op
    The primitive-op base class and :func:`apply`, the dispatcher every op goes through.
core.transfer, core.rng, core.special
    Moving data between contexts; one random generator per context; special functions.

**The ops**, one module per concept. They make their results from their inputs and never name
the NDArray class, not even for the type checker; the ``*Methods`` mixins they define make up
the class above them.

elementwise
    Ops of two arrays: arithmetic with broadcasting, comparisons, ``logical_and/or/xor``, the
    ``broadcast_*`` spellings, ``broadcast_hypot``.
unary
    Ops of one array: ``exp, log, sqrt, sin ... arctanh, erf, erfinv, gamma, gammaln, round,
    fix``, activations (``relu, sigmoid, tanh, hard_sigmoid, Activation``), clip, where, cast.
operators
    Python's arithmetic, comparison and in-place operators of NDArray.
reduce
    ``sum, mean, max, min, prod, nansum, nanprod, norm, moments, argmax, argmin,
    argmax_channel, cumsum, topk, sort, argsort``.
shape
    ``reshape, transpose, moveaxis, expand_dims, squeeze, broadcast_to, broadcast_axis, concat,
    stack, split, split_v2, slice, slice_like, tile, flip, diag, depth_to_space``...
padding
    ``pad`` (constant, edge and reflection padding).
indexing
    ``x[key]``, ``x[key] = v``, ``take, Embedding, pick, one_hot, gather_nd, scatter_nd,
    batch_take, ravel_multi_index, unravel_index``.
matmul
    ``dot, batch_dot, FullyConnected, khatri_rao``.
conv
    ``Convolution, Pooling, Deconvolution, UpSampling`` (the arithmetic is a kernel of
    :mod:`mxrs.kernels`).
correlation
    ``Correlation`` (FlowNet's correlation of two feature maps).
nn
    The softmax family (``softmin``, fused softmax cross-entropy, ``SoftmaxOutput``), ``Dropout``.
leaky
    ``LeakyReLU`` and its act_types (leaky, elu, selu, prelu, rrelu, gelu).
normalization
    ``BatchNorm, LayerNorm, InstanceNorm, GroupNorm, L2Normalization, LRN``.
sequence
    ``SequenceMask, SequenceLast, SequenceReverse``.
precision
    ``amp_cast, amp_multicast``: the casts automatic mixed precision inserts.
image
    ``mx.nd.image``: ``to_tensor, normalize, resize, crop, flip_left_right``, the random
    crops, flips and colour changes of images.
random_pdf
    ``random_pdf_uniform, random_pdf_normal ... random_pdf_dirichlet``: densities of samples,
    with their gradients.
optimizer_ops
    The optimizers' update operators: ``sgd_update, sgd_mom_update, adam_update, ...``, their
    ``mp_*`` and ``multi_*`` forms, ``multi_lars, multi_sum_sq`` (and ``mx.nd.contrib``'s
    ``adamw_update`` family and ``group_adagrad_update``).
losses
    ``smooth_l1, CTCLoss``, the output layers (``LinearRegressionOutput, MakeLoss``...),
    ``identity, BlockGrad`` (``stop_gradient``).
grad/
    The ops' backward written with recorded operations, for ``autograd.grad(create_graph=True)``
    (``grad.linear``: that of the linear ops, to any order).

**The class and what makes arrays**:

ndarray
    The :class:`NDArray` class: the core, the op mixins, conversions, context moves, autograd.
creation, serialize
    ``array, zeros, ones, full, empty, arange, *_like, eye, linspace``, ``waitall``;
    ``save``/``load`` in MXNet's binary format.
random
    ``mx.nd.random``: ``seed, uniform, normal, randint, shuffle``..., the ``*_like`` samplers.
random_sample
    ``sample_uniform, sample_normal``...: one set of draws per element of array parameters;
    ``sample_multinomial``, ``sample_unique_zipfian``.
_internal
    ``mx.nd._internal``: MXNet's underscore names of those operators.
sparse/
    ``mx.nd.sparse``: ``RowSparseNDArray``, ``CSRNDArray`` and their operators.
contrib/
    ``mx.nd.contrib``: ``foreach, while_loop, cond, boolean_mask, BilinearResize2D, box_nms``...
_pending
    Arrays that KVStore requests are still reading or writing; where their errors surface.
_failed
    Failed arrays: the outputs of an operator whose computation failed (``mxrs._failure``).

Below the package: ``mxrs._backend`` (NumPy or CuPy: the only code that tells the two libraries
apart), ``mxrs.context`` and ``mxrs.autograd`` (the tape, which knows arrays only by their slots).
"""

from . import (
    _failed,  # noqa: F401  (installs the failed arrays)
    _internal,  # noqa: F401
    contrib,  # noqa: F401
    random,  # noqa: F401
    sparse,  # noqa: F401
)
from . import image as image
from . import linalg as linalg
from .conv import *  # noqa: F403
from .correlation import *  # noqa: F403
from .creation import *  # noqa: F403
from .dlpack import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .grad import graph as _grad_graph  # noqa: F401  (gives autograd the create_graph rules)
from .indexing import (  # noqa: F401  (not getitem and setitem, which are NDArray's [])
    Embedding,
    batch_take,
    gather_nd,
    one_hot,
    onehot_encode,
    pick,
    ravel_multi_index,
    scatter_nd,
    take,
    unravel_index,
)
from .leaky import LeakyReLU
from .losses import *  # noqa: F403
from .matmul import *  # noqa: F403
from .ndarray import NDArray  # noqa: F401
from .nn import *  # noqa: F403
from .normalization import *  # noqa: F403
from .optimizer_ops import *  # noqa: F403
from .padding import *  # noqa: F403
from .precision import *  # noqa: F403
from .random_pdf import *  # noqa: F403
from .random_sample import (  # noqa: F401  (not sample_unique_zipfian, which is _internal)
    sample_exponential,
    sample_gamma,
    sample_generalized_negative_binomial,
    sample_multinomial,
    sample_negative_binomial,
    sample_normal,
    sample_poisson,
    sample_uniform,
)
from .reduce import *  # noqa: F403
from .rnn import *  # noqa: F403
from .roi import *  # noqa: F403
from .sequence import *  # noqa: F403
from .shape import *  # noqa: F403
from .sparse import cast_storage  # noqa: F401
from .sparse._arrays import CSRNDArray, RowSparseNDArray  # noqa: F401
from .spatial import *  # noqa: F403
from .unary import *  # noqa: F403
from .unary import abs, round  # noqa: F401  (shadow the builtins on purpose)
from .windows import *  # noqa: F403

# Lower-case names of the layer operators (as ``mx.npx`` spells them) and legacy random names.
convolution = Convolution  # noqa: F405
pooling = Pooling  # noqa: F405
fully_connected = FullyConnected  # noqa: F405
batch_norm = BatchNorm  # noqa: F405
layer_norm = LayerNorm  # noqa: F405
dropout = Dropout  # noqa: F405
embedding = Embedding
leaky_relu = LeakyReLU  # noqa: F405
activation = Activation  # noqa: F405
random_uniform = uniform = random.uniform
random_normal = normal = random.normal
random_randint = random.randint
random_poisson = random.poisson
random_exponential = random.random_exponential
random_gamma = random.gamma
random_negative_binomial = random.negative_binomial
random_generalized_negative_binomial = random.generalized_negative_binomial
shuffle = random.shuffle
# MXNet's other spellings of existing operators.
SwapAxis = swapaxes  # noqa: F405
Cast = cast  # noqa: F405
sum_axis = sum  # noqa: F405
max_axis = max  # noqa: F405
min_axis = min  # noqa: F405
choose_element_0index = pick


def _take_out() -> frozenset[str]:
    """Let every operator of the namespace take MXNet's ``out=`` and ``name=`` keywords;
    return the names of the namespace's operators."""
    import inspect

    from . import (
        conv,
        correlation,
        elementwise,
        indexing,
        leaky,
        losses,
        matmul,
        nn,
        normalization,
        optimizer_ops,
        padding,
        precision,
        random_pdf,
        reduce,
        rnn,
        roi,
        sequence,
        shape,
        spatial,
        unary,
        windows,
    )
    from .core.op import with_out

    mods = (
        conv,
        correlation,
        elementwise,
        indexing,
        leaky,
        losses,
        matmul,
        nn,
        normalization,
        optimizer_ops,
        padding,
        precision,
        random_pdf,
        reduce,
        rnn,
        sequence,
        roi,
        shape,
        spatial,
        unary,
        windows,
    )
    names = {n for m in mods for n in m.__all__}
    names |= set(linalg._prefixed())
    names |= {"take", "pick", "one_hot", "Embedding", "abs", "round"}
    names |= {"SwapAxis", "Cast", "sum_axis", "max_axis", "min_axis", "choose_element_0index"}
    operators = frozenset(names)
    names -= set(losses.OUTPUT_LAYERS)  # the symbolic API's output layers take neither keyword
    space = globals()
    for name in names:
        fn = space.get(name)
        if inspect.isfunction(fn):
            space[name] = with_out(fn)
    return operators


globals().update(linalg._prefixed())  # MXNet's top-level names: linalg_gemm...
#: The namespace's operators, by MXNet's names (what ``mx.profiler`` times).
_OPERATOR_NAMES = _take_out()
