"""Gluon: MXNet's imperative interface (blocks, parameters, losses, data, Trainer).

Layout
------
parameter
    ``Parameter`` (one copy per context, deferred initialization) and ``Constant``.
parameter_dict
    ``ParameterDict``: named parameters with bulk initialize, save and load.
block
    ``Block`` and ``HybridBlock``: naming scopes, child and parameter registration.
_symbolic
    HybridBlocks called on Symbols, the graph of a hybridized block, ``export``.
symbol_block
    ``SymbolBlock``: a block running a Symbol graph (``SymbolBlock.imports``).
nn
    Layers: dense, convolution, pooling, normalization, activations, containers.
rnn
    Recurrent cells (``RNNCell``, ``LSTMCell``, ``GRUCell``...) and their unrolling.
contrib
    Contributed blocks: ``contrib.rnn`` (variational dropout, LSTMP and convolutional cells).
loss
    ``L2Loss``, ``L1Loss``, ``SoftmaxCrossEntropyLoss``, ``SigmoidBinaryCrossEntropyLoss``, ...
utils
    ``split_data``, ``split_and_load`` (also by work load), ``clip_global_norm``.
data
    Datasets, samplers, ``DataLoader`` and ``vision``.
model_zoo
    Predefined networks (``model_zoo.vision``: ResNet, VGG, AlexNet, MobileNet).
trainer
    ``Trainer``: the optimizer applied through a KVStore across devices and workers.
metric
    The same module as ``mx.metric``.
"""

from .. import metric
from . import contrib, data, loss, model_zoo, nn, rnn, utils
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter
from .parameter_dict import ParameterDict
from .symbol_block import SymbolBlock
from .trainer import Trainer

__all__ = [
    "Block",
    "Constant",
    "DeferredInitializationError",
    "HybridBlock",
    "Parameter",
    "ParameterDict",
    "SymbolBlock",
    "Trainer",
    "contrib",
    "data",
    "loss",
    "metric",
    "model_zoo",
    "nn",
    "rnn",
    "utils",
]
