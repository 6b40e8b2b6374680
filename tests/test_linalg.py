"""mx.nd.linalg (and mx.sym.linalg) against Apache MXNet 1.9.1: every operator's output and
every input's gradient, on a batch of matrices, for random output gradients."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import nd

RNG = np.random.default_rng(7)


def _spd(*batch, n=3):
    a = RNG.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _sym(*batch, n=3):
    a = RNG.standard_normal((*batch, n, n))
    return a + np.swapaxes(a, -1, -2)


def _lower(*batch, n=3):
    low = np.tril(RNG.standard_normal((*batch, n, n)))
    idx = np.arange(n)
    low[..., idx, idx] = np.abs(low[..., idx, idx]) + 1.0
    return low


#: name, inputs, attributes (each run on both libraries the same way)
CASES = [
    ("gemm", ["a34", "b45", "c35"], {"alpha": 0.5, "beta": 2.0}),
    ("gemm", ["a43", "b54", "c35"], {"transpose_a": True, "transpose_b": True}),
    ("gemm2", ["a34", "b45"], {"alpha": -1.5}),
    ("gemm2", ["a43", "b45"], {"transpose_a": True}),
    ("syrk", ["a34"], {"alpha": 0.7}),
    ("syrk", ["a34"], {"transpose": True}),
    ("trmm", ["l33", "b34"], {"alpha": 2.0}),
    ("trmm", ["l33", "b43"], {"rightside": True, "transpose": True, "lower": False}),
    ("trsm", ["l33", "b34"], {"alpha": 0.5}),
    ("trsm", ["l33", "b43"], {"rightside": True, "transpose": True}),
    ("trsm", ["u33", "b34"], {"lower": False}),
    ("potrf", ["spd"], {}),
    ("potri", ["l33"], {}),
    ("inverse", ["spd"], {}),
    ("det", ["a33"], {}),
    ("slogdet", ["a33"], {}),
    ("extractdiag", ["a33"], {"offset": 1}),
    ("makediag", ["v3"], {"offset": -1}),
    ("extracttrian", ["a33"], {}),
    ("extracttrian", ["a33"], {"lower": False}),
    ("extracttrian", ["a33"], {"offset": 1}),
    ("extracttrian", ["a33"], {"offset": -1}),
    ("maketrian", ["v6"], {}),
    ("maketrian", ["v6"], {"lower": False}),
    ("maketrian", ["v3"], {"offset": 1}),
    ("maketrian", ["v3"], {"offset": -1}),
    ("sumlogdiag", ["spd"], {}),
    ("gemm", ["a4d", "b4d", "c4d"], {"axis": 1, "alpha": 0.5, "beta": -1.0}),
    ("gemm2", ["b4d", "a4d"], {"axis": -3, "transpose_a": True, "transpose_b": True}),
    ("gelqf", ["a35"], {}),
    ("syevd", ["sym4"], {}),
]


def _inputs():
    b = (2,)
    return {
        "a34": RNG.standard_normal((*b, 3, 4)),
        "a43": RNG.standard_normal((*b, 4, 3)),
        "b45": RNG.standard_normal((*b, 4, 5)),
        "b54": RNG.standard_normal((*b, 5, 4)),
        "c35": RNG.standard_normal((*b, 3, 5)),
        "b34": RNG.standard_normal((*b, 3, 4)),
        "b43": RNG.standard_normal((*b, 4, 3)),
        "a33": RNG.standard_normal((*b, 3, 3)) + 2 * np.eye(3),
        "l33": _lower(*b),
        "u33": np.swapaxes(_lower(*b), -1, -2),
        "spd": _spd(*b),
        "v3": RNG.standard_normal((*b, 3)),
        "v6": RNG.standard_normal((*b, 6)),
        "a4d": RNG.standard_normal((*b, 3, 4, 5)),  # rows on axis 1, columns last
        "b4d": RNG.standard_normal((*b, 5, 4, 3)),
        "c4d": RNG.standard_normal((*b, 3, 4, 3)),
        "a35": RNG.standard_normal((*b, 3, 5)),
        "sym4": _sym(*b, n=4),
    }


def _run(lib, fn_of, inputs):
    """Outputs and gradients of every case under ``lib`` (mxrs or mxnet)."""
    out = {}
    for i, (name, args, attrs) in enumerate(CASES):
        arrays = [lib.nd.array(inputs[a], dtype="float64") for a in args]
        for a in arrays:
            a.attach_grad()
        with lib.autograd.record():
            ys = fn_of(lib, name)(*arrays, **attrs)
        ys = ys if isinstance(ys, list) else [ys]
        heads = [
            lib.nd.array(np.cos(np.arange(y.size) + i).reshape(y.shape), dtype="float64")
            for y in ys
        ]
        # slogdet: the log-determinant only (the sign has no gradient)
        lib.autograd.backward(
            ys[-1:] if name == "slogdet" else ys, heads[-1:] if name == "slogdet" else heads
        )
        for j, y in enumerate(ys):
            out[f"{i}.y{j}"] = y.asnumpy()
        for j, a in enumerate(arrays):
            out[f"{i}.g{j}"] = a.grad.asnumpy()
    return out


def test_linalg_matches_mxnet(tmp_path):
    import json

    inputs = _inputs()
    script = """
import json
cases = json.loads(bytes(inputs.pop("cases")).decode())
for i, (name, args, attrs) in enumerate(cases):
    xs = [mx.nd.array(inputs[a], dtype="float64") for a in args]
    for a in xs:
        a.attach_grad()
    with mx.autograd.record():
        ys = getattr(mx.nd.linalg, name)(*xs, **attrs)
    ys = ys if isinstance(ys, list) else [ys]
    heads = [mx.nd.array(np.cos(np.arange(y.size) + i).reshape(y.shape), dtype="float64")
             for y in ys]
    if name == "slogdet":
        ys, heads = ys[-1:] + ys[:-1], heads[-1:]
        mx.autograd.backward(ys[:1], heads)
        ys = ys[1:] + ys[:1]
    else:
        mx.autograd.backward(ys, heads)
    for j, y in enumerate(ys):
        arrays[f"{i}.y{j}"] = y.asnumpy()
    for j, a in enumerate(xs):
        arrays[f"{i}.g{j}"] = a.grad.asnumpy()
"""
    cases = np.frombuffer(json.dumps(CASES).encode(), dtype=np.uint8)
    _, want = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + script, cases=cases, **inputs)
    got = _run(mx, lambda lib, name: getattr(lib.nd.linalg, name), inputs)
    assert sorted(got) == sorted(want)
    for key in sorted(got):
        name = CASES[int(key.split(".")[0])][0]
        np.testing.assert_allclose(
            got[key], want[key], rtol=1e-9, atol=1e-10, err_msg=f"{key} ({name})"
        )


def test_linalg_names_errors_and_symbols():
    a = nd.array(np.eye(2) * 2)
    assert nd.linalg_det(a).shape == (1,) and nd.linalg.det(a).asscalar() == 4.0
    with pytest.raises(mx.MXNetError, match="not positive definite"):
        nd.linalg.potrf(nd.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(mx.MXNetError, match="do not multiply"):
        nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match="square matrices"):
        nd.linalg.inverse(nd.ones((2, 3)))
    with pytest.raises(mx.MXNetError, match="5 entries make no triangle"):
        nd.linalg.maketrian(nd.ones((5,)))
    with pytest.raises(mx.MXNetError, match="axis -1 cannot hold the rows"):
        nd.linalg.gemm2(nd.ones((2, 2)), nd.ones((2, 2)), axis=-1)
    with pytest.raises(mx.MXNetError, match="x <= y"):
        nd.linalg.gelqf(nd.ones((3, 2)))
    with pytest.raises(mx.MXNetError, match="full row rank"):
        nd.linalg.gelqf(nd.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]], dtype="float64"))
    with pytest.raises(mx.MXNetError, match="float32 and float64 only"):
        nd.linalg.syevd(nd.ones((2, 2), dtype="float16"))
    x, y = mx.sym.var("x"), mx.sym.var("y")
    assert mx.sym.linalg.syevd(x).list_outputs() == ["syevd0_output0", "syevd0_output1"]
    assert mx.sym.linalg.gemm2(x, y).list_outputs() == ["gemm20_output"]
    assert mx.sym.linalg.slogdet(x).list_outputs() == ["slogdet0_output0", "slogdet0_output1"]
    sym = mx.sym.linalg.gemm2(x, y, transpose_b=True, alpha=2.0)
    ex = sym.bind(mx.cpu(), {"x": nd.ones((2, 3)), "y": nd.ones((4, 3))})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), np.full((2, 4), 6.0))
