"""Which operators AMP runs in bfloat16, which in float32 and which in either.

These are MXNet 1.9.1's lists (``mxnet/contrib/amp/lists/symbol_bf16.py``), in its order,
restricted to the operators mxrs has (a symbol operator or an ``mx.nd`` function of that
name); MXNet's other entries (sparse, quantized, image and most underscore-named operators)
are left out.

MXNet's bfloat16 lists come from its float16 ones: the float16 low-precision and
either-type lists, ``broadcast_mul`` (a float16 widest-type operator) and the float32 list all
run in float32, but for the operators of this module's own bfloat16 and either-type lists and
``amp_cast``/``amp_multicast`` (which it lists nowhere). So the float32 and widest-type lists
here are built from ``symbol_fp16``'s, in their order.
"""

from . import symbol_fp16 as _fp16

# Run in bfloat16: their inputs are cast to bfloat16.
BF16_FUNCS = [
    "Convolution",
    "FullyConnected",
]

# Run in whatever type their inputs have: no cast is added.
BF16_FP32_FUNCS = [
    "abs",
    "BatchNorm",
    "clip",
    "Concat",
    "concat",
    "LRN",
    "Pooling",
    "relu",
    "shuffle",
    "sqrt",
    "square",
    "tanh",
]

# When one of these is made to run in bfloat16, the inputs named here keep float32 (by position;
# an empty name is cast).
BF16_USE_FP32_PARAMS = {
    "BatchNorm": ["", "gamma", "beta", "moving_mean", "moving_var"],
}

# Operators of the float16 lists that bfloat16 lists elsewhere, or nowhere.
_MOVED = {*BF16_FUNCS, *BF16_FP32_FUNCS, "amp_cast", "amp_multicast", "broadcast_mul"}


def _kept(names: list[str]) -> list[str]:
    """``names`` (one of ``symbol_fp16``'s lists) less the operators of ``_MOVED``, in order."""
    return [n for n in names if n not in _MOVED]


# Run in float32 (their inputs are cast to float32): low precision could overflow or lose too
# much.
FP32_FUNCS = [
    "softmax_ce_loss",  # mxrs: Gluon's fused loss (MXNet: log_softmax and pick, float32 ops)
    *_kept(_fp16.FP16_FUNCS),  # Deconvolution, RNN
    *_kept(_fp16.FP16_FP32_FUNCS),
    "broadcast_mul",
    *_kept(_fp16.FP32_FUNCS[1:]),  # after its softmax_ce_loss
]

# Run in float32 when the parameter has one of the values listed: (name, parameter, values).
CONDITIONAL_FP32_FUNCS = [
    (op, param, list(values)) for op, param, values in _fp16.CONDITIONAL_FP32_FUNCS
]

# Take several inputs of one type: their float inputs are cast to the widest type among them.
WIDEST_TYPE_CASTS = _kept(_fp16.WIDEST_TYPE_CASTS)

# Output layers whose gradient AMP scales by the loss scale (their grad_scale).
LOSS_OUTPUT_FUNCTIONS = list(_fp16.LOSS_OUTPUT_FUNCTIONS)
