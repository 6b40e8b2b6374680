"""The array core below every op: what an array is and how an op runs on arrays.

Layout
------
array
    ``ArrayCore``: the slots and read-only attributes of an array, and ``ArrayT``, the type op
    modules give their operands and results. The rule that keeps the import graph one-way.
op
    The primitive-op base class ``Op`` and :func:`apply`, the dispatcher every op goes through
    (recording, contexts, sparse rules); ``with_out`` and ``as_method``.
transfer
    Moving data between contexts (and the recorded copy behind ``copyto``), raw data from
    array-likes.
rng
    One random generator per context, and the seed they derive from.
special
    Special functions on raw arrays of either library (erf, erfinv, gamma, digamma...).

This package imports nothing at import time: each module imports only ``mxrs.base``,
``mxrs.context``, ``mxrs.autograd`` and its siblings, so the op modules can stand on it.
"""
