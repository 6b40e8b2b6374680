"""Optimizers (``mx.optimizer``): MXNet 1.x's update rules on NumPy and CuPy arrays.

Every optimizer is registered by lower-case name for :func:`create`, updates weights in place
(never recorded by autograd), and, except FTRL and custom ones, describes itself to the
parameter servers with ``to_spec()`` as a name and numbers.

Layout
------
optimizer
    :class:`Optimizer` (hyper-parameters, multipliers, update counts, ``to_spec``), the
    registry: ``register``, ``create``.
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
"""

from . import adagrad, adam, ftrl, nag, optimizer, rmsprop, sgd, signum, updater
from .adagrad import AdaGrad
from .adam import Adam
from .ftrl import FTRL, Ftrl
from .nag import NAG
from .optimizer import Optimizer, create, register
from .rmsprop import RMSProp
from .sgd import SGD
from .signum import Signum
from .updater import Updater, get_updater

__all__ = [
    "AdaGrad",
    "Adam",
    "FTRL",
    "Ftrl",
    "NAG",
    "Optimizer",
    "RMSProp",
    "SGD",
    "Signum",
    "Updater",
    "adagrad",
    "adam",
    "create",
    "ftrl",
    "get_updater",
    "nag",
    "optimizer",
    "register",
    "rmsprop",
    "sgd",
    "signum",
    "updater",
]
