"""Optimizers (``mx.optimizer``): MXNet 1.x's update rules on NumPy and CuPy arrays.

Every optimizer is registered by lower-case name for :func:`create`, updates weights in place
(never recorded by autograd; sparse weights and states too), and, except FTRL, those listed
as workers only below and custom ones, describes itself to the parameter servers with
``to_spec()`` as a name and numbers.

Layout
------
optimizer
    :class:`Optimizer` (hyper-parameters, multipliers, update counts, ``to_spec``), the
    registry: ``register``, ``create``.
_sparse
    Updates with sparse gradients, weights or states: MXNet's lazy updates from ``row_sparse``
    gradients, storage fallback for the rest.
updater
    :class:`Updater` and ``get_updater``: per-parameter states, ``get_states``/``set_states``.
sgd, nag
    ``SGD`` (momentum, weight decay) and ``NAG`` (Nesterov momentum).
adam, adagrad, rmsprop
    The adaptive ones: ``Adam``, ``AdaGrad``, ``RMSProp`` (plain and centered).
signum
    ``Signum`` and, at momentum 0, signSGD.
ftrl
    ``FTRL`` (workers only: the servers do not run it).
adamax, adadelta, ftml, lamb, sgld
    ``Adamax``, ``AdaDelta``, ``FTML`` (the servers run them too); ``Nadam``, ``LAMB``,
    ``SGLD``, ``DCASGD`` (workers only).
test
    ``Test``: MXNet's optimizer for tests (``weight += rescale_grad * grad``).

Distributed stores send the servers what they do not run natively (``Test``, custom
optimizers, those marked workers only) pickled, as MXNet does; servers started from Python run
it (``mxrs.kvstore.server_optimizer``).
"""

from . import (
    adadelta,
    adagrad,
    adam,
    adamax,
    contrib,
    ftml,
    ftrl,
    lamb,
    nag,
    optimizer,
    rmsprop,
    sgd,
    sgld,
    signum,
    test,
    updater,
)
from .adadelta import AdaDelta
from .adagrad import AdaGrad
from .adam import Adam
from .adamax import Adamax, Nadam
from .ftml import FTML
from .ftrl import FTRL, Ftrl
from .lamb import LAMB
from .nag import NAG
from .optimizer import Optimizer, create, register
from .rmsprop import RMSProp
from .sgd import SGD
from .sgld import DCASGD, SGLD
from .signum import Signum
from .test import Test
from .updater import Updater, get_updater

__all__ = [
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "Adamax",
    "DCASGD",
    "FTML",
    "LAMB",
    "Nadam",
    "SGLD",
    "FTRL",
    "Ftrl",
    "NAG",
    "Optimizer",
    "RMSProp",
    "SGD",
    "Signum",
    "Test",
    "Updater",
    "adadelta",
    "adagrad",
    "adam",
    "adamax",
    "contrib",
    "ftml",
    "lamb",
    "sgld",
    "create",
    "ftrl",
    "get_updater",
    "nag",
    "optimizer",
    "register",
    "rmsprop",
    "sgd",
    "signum",
    "test",
    "updater",
]
