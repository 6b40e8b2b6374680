"""Weight initializers (``mx.init`` / ``mx.initializer``), with MXNet 1.x's formulas.

An initializer is called as ``init(desc, arr)``: ``desc`` is an :class:`InitDesc` (a ``str``, the
parameter's name, with attributes) and ``arr`` the NDArray to fill in place. When
``desc.attrs['__init__']`` names an initializer (Gluon puts a parameter's own ``init`` there), that
initializer's ``_init_weight`` fills the array whatever the name; otherwise the name's suffix picks
the rule: ``weight`` -> ``_init_weight``, ``bias`` and ``beta`` -> 0, ``gamma`` -> 1,
``moving_mean``/``running_mean`` -> 0, ``moving_var``/``running_var`` -> 1.

Random initializers draw through :mod:`mxrs.random`, so ``mx.random.seed(n)`` makes them
reproducible. Initializers are registered by lower-case class name (and aliases such as
``'zeros'``, ``'ones'``) and created with :func:`create`.

Examples
--------
>>> w = mx.nd.zeros((64, 100))
>>> mx.init.Xavier(magnitude=2.24)(mx.init.InitDesc('fc_weight'), w)
>>> mx.init.create('zeros')
<mxrs.initializer.Zero object at ...>

Layout
------
base
    ``InitDesc``, ``Initializer`` and the registry (``register``, ``alias``, ``create``).
common
    ``Zero``, ``One``, ``Constant``, ``Uniform``, ``Normal``, ``Orthogonal``, ``Xavier``,
    ``MSRAPrelu``, ``Bilinear``.
rnn
    ``LSTMBias``, ``FusedRNN``.
composite
    ``Mixed``, ``Load``.
"""

from .base import *  # noqa: F403
from .base import __all__ as _base
from .common import *  # noqa: F403
from .common import __all__ as _common
from .composite import *  # noqa: F403
from .composite import __all__ as _composite
from .rnn import *  # noqa: F403
from .rnn import __all__ as _rnn

__all__ = [*_base, *_common, *_rnn, *_composite]
