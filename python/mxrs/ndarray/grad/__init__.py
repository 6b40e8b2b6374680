"""Differentiable backward rules: the ops' gradients written with recorded operations.

``autograd.grad(create_graph=True)`` runs these instead of the ops' raw-array ``backward``, so a
gradient can be differentiated again. Importing :mod:`.graph` installs the rules into autograd
(``mxrs.ndarray`` does).

Layout
------
graph
    The rule of each op that has one, by op class, and its installation.
linear
    The rules of the linear ops, whose backward is the same linear map again, to any order.
"""
