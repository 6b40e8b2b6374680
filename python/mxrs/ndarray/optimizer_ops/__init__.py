"""The optimizer update operators of MXNet 1.9.1: ``sgd_update``, ``adam_update``, ... and their
multi-precision (``mp_*``) and many-weight (``multi_*``, ``preloaded_multi_*``) forms, the LAMB
and LARS helpers, and ``mx.nd.contrib``'s ``adamw_update`` family and ``group_adagrad_update``.

Each operator takes the weight, the gradient and the optimizer's states as arrays and its
hyper-parameters as numbers; it updates the states in place (MXNet's mutable inputs: ``mom``,
``mean``, ``var``, ``weight32``...) and returns the new weight. Passing the weight as ``out``
makes the update in place, as MXNet's optimizers call them::

    mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, wd=1e-4, out=w)

What the kernels share, as MXNet 1.9.1's:

- the gradient is multiplied by ``rescale_grad``, then clipped into
  ``[-clip_gradient, clip_gradient]`` when ``clip_gradient >= 0`` (a negative value turns
  clipping off; 0 clips every gradient to 0);
- ``mp_*`` operators keep a float32 master copy ``weight32`` of a (float16) weight: the update
  runs in float32 on the master copy and states, and the result is cast to the weight's dtype;
- ``multi_*`` operators update ``num_weights`` weights at once from the per-weight groups of
  inputs flattened (``w0, g0, w1, g1, ...``), with one learning rate and weight decay per weight
  (``lrs``, ``wds``), and return one array per weight; ``preloaded_multi_*`` take the learning
  rates and weight decays as two trailing float32 arrays;
- with a ``row_sparse`` gradient, ``sgd_update``, ``sgd_mom_update`` and ``adam_update`` (with
  ``lazy_update`` and the states in the weight's storage type), ``ftrl_update`` (row_sparse
  weight and states) and ``group_adagrad_update`` change only the rows the gradient stores, in
  the weight and in the states; every other operator, and those with ``lazy_update=False``, run
  as with the dense gradient (zeros elsewhere);
- the ``adamw_update`` family takes ``rescale_grad`` as an array (or a number) and skips the
  whole update, states included, when it is 0, infinite or NaN.

The operators live by optimizer family: :mod:`.sgd` (SGD, momentum, NAG and their ``mp_*``,
``multi_*`` and ``preloaded_multi_*`` forms), :mod:`.adam` (Adam, FTML, the AdamW family),
:mod:`.rmsprop`, :mod:`.ftrl`, :mod:`.signum` (signSGD, Signum), :mod:`.lamb`, :mod:`.lars`
(``multi_lars``, ``multi_sum_sq``) and :mod:`.adagrad` (Group AdaGrad); :mod:`._common` holds
what they share.
"""

from __future__ import annotations

# mx.nd.contrib's operators (CONTRIB), the rule GroupAdaGrad shares and MXNet's flat
# ``_multi_*adamw_update`` (mx.nd._internal): names of this package outside ``__all__``
from .adagrad import group_adagrad_rows as group_adagrad_rows
from .adagrad import group_adagrad_update as group_adagrad_update
from .adam import _multi_adamw_update as _multi_adamw_update
from .adam import _multi_mp_adamw_update as _multi_mp_adamw_update
from .adam import adam_update, ftml_update
from .adam import adamw_update as adamw_update
from .adam import mp_adamw_update as mp_adamw_update
from .adam import multi_adamw_update as multi_adamw_update
from .adam import multi_mp_adamw_update as multi_mp_adamw_update
from .ftrl import ftrl_update
from .lamb import (
    lamb_update_phase1,
    lamb_update_phase2,
    mp_lamb_update_phase1,
    mp_lamb_update_phase2,
)
from .lars import multi_lars, multi_sum_sq
from .rmsprop import rmsprop_update, rmspropalex_update
from .sgd import (
    mp_nag_mom_update,
    mp_sgd_mom_update,
    mp_sgd_update,
    multi_mp_sgd_mom_update,
    multi_mp_sgd_update,
    multi_sgd_mom_update,
    multi_sgd_update,
    nag_mom_update,
    preloaded_multi_mp_sgd_mom_update,
    preloaded_multi_mp_sgd_update,
    preloaded_multi_sgd_mom_update,
    preloaded_multi_sgd_update,
    sgd_mom_update,
    sgd_update,
)
from .signum import signsgd_update, signum_update

__all__ = [
    "sgd_update",
    "sgd_mom_update",
    "mp_sgd_update",
    "mp_sgd_mom_update",
    "multi_sgd_update",
    "multi_sgd_mom_update",
    "multi_mp_sgd_update",
    "multi_mp_sgd_mom_update",
    "preloaded_multi_sgd_update",
    "preloaded_multi_sgd_mom_update",
    "preloaded_multi_mp_sgd_update",
    "preloaded_multi_mp_sgd_mom_update",
    "nag_mom_update",
    "mp_nag_mom_update",
    "adam_update",
    "rmsprop_update",
    "rmspropalex_update",
    "ftrl_update",
    "ftml_update",
    "signsgd_update",
    "signum_update",
    "lamb_update_phase1",
    "lamb_update_phase2",
    "mp_lamb_update_phase1",
    "mp_lamb_update_phase2",
    "multi_lars",
    "multi_sum_sq",
]

#: ``mx.nd.contrib``'s operators of this module.
CONTRIB = (
    "adamw_update",
    "mp_adamw_update",
    "multi_adamw_update",
    "multi_mp_adamw_update",
    "group_adagrad_update",
)
