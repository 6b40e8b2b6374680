"""Finite-difference gradient checking shared by the op tests.

``check_grad`` runs an op under ``autograd.record()`` in float64, back-propagates a random head
gradient, and compares every input's gradient with central differences of
``sum(head * op(inputs))``.
"""

import mxrs as mx
import numpy as np
from mxrs import autograd, nd


def check_grad(fn, inputs, nondiff=(), eps=1e-6, rtol=1e-5, atol=1e-7, seed=0):
    """Assert that the analytic gradients of ``fn`` match central differences.

    Parameters
    ----------
    fn : callable
        Takes NDArrays, returns one NDArray.
    inputs : list of numpy.ndarray
        Input values (converted to float64 unless integer).
    nondiff : iterable of int
        Positions of inputs that get no gradient (indices, labels, running statistics).
    """
    rng = np.random.default_rng(seed)
    vals = [
        np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v)
        for v in inputs
    ]
    arrays = [nd.array(v, dtype=v.dtype) for v in vals]
    diff = [i for i in range(len(vals)) if i not in set(nondiff)]
    for i in diff:
        arrays[i].attach_grad()
    with autograd.record():
        out = fn(*arrays)
    head = rng.standard_normal(out.shape)
    out.backward(nd.array(head, dtype=np.float64))
    for i in diff:
        x = vals[i].copy()
        num = np.zeros_like(x)
        flat, nflat = x.reshape(-1), num.reshape(-1)
        for k in range(flat.size):
            orig = flat[k]
            flat[k] = orig + eps
            fp = _objective(fn, vals, i, x, head)
            flat[k] = orig - eps
            fm = _objective(fn, vals, i, x, head)
            flat[k] = orig
            nflat[k] = (fp - fm) / (2 * eps)
        np.testing.assert_allclose(
            arrays[i].grad.asnumpy(), num, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}"
        )
    return out


def _objective(fn, vals, i, x, head):
    args = [nd.array(x if j == i else v, dtype=v.dtype) for j, v in enumerate(vals)]
    with autograd.train_mode():
        return float((fn(*args).asnumpy() * head).sum())


def rand(*shape, low=-1.0, high=1.0, seed=None):
    """Uniform float64 test input (deterministic per shape unless ``seed`` is given)."""
    rng = np.random.default_rng(seed if seed is not None else hash(shape) % 2**32)
    return rng.uniform(low, high, size=shape)


__all__ = ["check_grad", "rand", "mx"]
