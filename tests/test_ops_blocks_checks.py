"""im2col and col2im (sliding blocks), the finiteness checks of AMP (all_finite,
multi_all_finite), histogram and crop, each against Apache MXNet 1.9.1 (``mxnet_ref``), and
their errors."""

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from gradcheck import check_grad, rand
from mxrs import autograd, nd

#: Data shape, kernel, stride, dilate, pad. MXNet 1.9.1's im2col works for 2-D only (1-D fails
#: with "index = 3 must be in range [0, 3)", 3-D with "new and old shape do not match"): 1-D and
#: 3-D are checked against NumPy and by gradcheck below.
GEOMETRIES = [
    ((2, 3, 7, 8), (2, 3), (2, 1), (1, 2), (1, 0)),
    ((1, 2, 6, 5), (3, 3), (1, 2), (2, 1), (2, 1)),
]


def test_im2col_and_col2im_match_mxnet(tmp_path):
    inputs = {}
    for i, (shape, *_) in enumerate(GEOMETRIES):
        inputs[f"x{i}"] = rand(*shape, seed=i)
    script = f"""
import mxnet as mx
from mxnet import autograd
geoms = {GEOMETRIES!r}
for i, (shape, k, s, d, p) in enumerate(geoms):
    x = mx.nd.array(inputs[f"x{{i}}"], dtype="float64")
    x.attach_grad()
    with autograd.record():
        c = mx.nd.im2col(x, kernel=k, stride=s, dilate=d, pad=p)
    head = mx.nd.array(np.linspace(-1, 1, c.size).reshape(c.shape), dtype="float64")
    c.backward(head)
    arrays[f"c{{i}}"], arrays[f"gx{{i}}"] = c.asnumpy(), x.grad.asnumpy()
    cols = mx.nd.array(np.cos(np.arange(c.size)).reshape(c.shape), dtype="float64")
    cols.attach_grad()
    with autograd.record():
        img = mx.nd.col2im(cols, output_size=shape[2:], kernel=k, stride=s, dilate=d, pad=p)
    img.backward(mx.nd.array(np.sin(np.arange(img.size)).reshape(img.shape), dtype="float64"))
    arrays[f"img{{i}}"], arrays[f"gc{{i}}"] = img.asnumpy(), cols.grad.asnumpy()
"""
    _, want = mxnet_ref.run(tmp_path, script, **inputs)
    for i, (shape, k, s, d, p) in enumerate(GEOMETRIES):
        x = nd.array(inputs[f"x{i}"], dtype="float64")
        x.attach_grad()
        with autograd.record():
            c = nd.im2col(x, kernel=k, stride=s, dilate=d, pad=p)
        c.backward(nd.array(np.linspace(-1, 1, c.size).reshape(c.shape), dtype="float64"))
        np.testing.assert_allclose(c.asnumpy(), want[f"c{i}"], rtol=1e-12, err_msg=str(i))
        np.testing.assert_allclose(x.grad.asnumpy(), want[f"gx{i}"], rtol=1e-12)
        cols = nd.array(np.cos(np.arange(c.size)).reshape(c.shape), dtype="float64")
        cols.attach_grad()
        with autograd.record():
            img = nd.col2im(cols, output_size=shape[2:], kernel=k, stride=s, dilate=d, pad=p)
        img.backward(nd.array(np.sin(np.arange(img.size)).reshape(img.shape), dtype="float64"))
        np.testing.assert_allclose(img.asnumpy(), want[f"img{i}"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cols.grad.asnumpy(), want[f"gc{i}"], rtol=1e-12, atol=1e-12)


def test_three_dimensional_im2col_gathers_each_window():
    x = rand(1, 2, 3, 4, 3)
    c = nd.im2col(nd.array(x, dtype="float64"), kernel=(2, 2, 2)).asnumpy()
    blocks = [
        x[:, :, i : i + 2, j : j + 2, k : k + 2].reshape(1, 16)
        for i in range(2)
        for j in range(3)
        for k in range(2)
    ]
    np.testing.assert_array_equal(c, np.stack(blocks, axis=-1))


def test_one_dimensional_im2col_gathers_each_window():
    x = rand(2, 3, 9)
    c = nd.im2col(nd.array(x, dtype="float64"), kernel=(3,), stride=(2,), pad=(1,)).asnumpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    want = np.stack([xp[:, :, 2 * j : 2 * j + 3].reshape(2, 9) for j in range(5)], axis=-1)
    np.testing.assert_array_equal(c, want)  # column rows: channel first, then the offset


def test_im2col_gradient_and_errors():
    check_grad(lambda x: nd.im2col(x, kernel=(2, 2), stride=(1, 2), pad=(1, 1)), [rand(2, 2, 4, 5)])
    check_grad(lambda x: nd.im2col(x, kernel=(3,), stride=(2,), pad=(1,)), [rand(2, 2, 7)])
    check_grad(
        lambda x: nd.im2col(x, kernel=(2, 2, 2), dilate=(1, 2, 1), pad=(0, 1, 0)),
        [rand(1, 2, 3, 4, 3)],
    )
    check_grad(
        lambda c: nd.col2im(c, output_size=(7,), kernel=(3,), stride=(2,), pad=(1,)),
        [rand(2, 6, 4)],
    )
    with pytest.raises(mx.MXNetError, match="does not have 2 spatial dimensions"):
        nd.im2col(nd.ones((2, 3, 4)), kernel=(2, 2))
    with pytest.raises(mx.MXNetError, match="stride \\(1,\\) does not match kernel"):
        nd.im2col(nd.ones((2, 3, 4, 4)), kernel=(2, 2), stride=(1,))
    with pytest.raises(mx.MXNetError, match="larger than the padded data"):
        nd.im2col(nd.ones((1, 1, 2, 2)), kernel=(3, 3))
    with pytest.raises(mx.MXNetError, match=r"is not \(N, C\*4, 9\)"):
        nd.col2im(nd.ones((1, 4, 8)), output_size=(4, 4), kernel=(2, 2))
    sym = mx.sym.col2im(mx.sym.var("c"), output_size=(4, 4), kernel=(2, 2))
    assert sym.infer_shape(c=(2, 12, 9))[1] == [(2, 3, 4, 4)]


def test_finiteness_checks_histogram_and_crop_match_mxnet(tmp_path):
    a = np.array([0.1, 0.5, 0.5, 2.0, 3.9, -1.0, 7.0, 4.0], dtype=np.float32)
    script = """
import mxnet as mx
a = mx.nd.array(inputs["a"])
for name, (h, e) in {
    "n": mx.nd.histogram(a, bins=4),
    "r": mx.nd.histogram(a, bins=3, range=(0, 4)),
    "e": mx.nd.histogram(a, bins=mx.nd.array([0, 1, 2, 5])),
}.items():
    arrays[name + ".h"], arrays[name + ".e"] = h.asnumpy(), e.asnumpy()
bad = mx.nd.array([1, np.inf])
arrays["fin"] = np.concatenate([
    mx.nd.all_finite(a).asnumpy(), mx.nd.all_finite(bad).asnumpy(),
    mx.nd.multi_all_finite(a, bad, num_arrays=2).asnumpy(),
    mx.nd.multi_all_finite(a, a, num_arrays=2).asnumpy(),
])
o = mx.nd.array([0.0])
mx.nd.all_finite(a, init_output=False, out=o)
arrays["kept"] = o.asnumpy()
m = mx.nd.array(inputs["a"].reshape(2, 4))
arrays["crop"] = mx.nd.crop(m, begin=(0, 1), end=(2, 3)).asnumpy()
"""
    _, want = mxnet_ref.run(tmp_path, script, a=a)
    x = nd.array(a)
    with pytest.warns(UserWarning, match="range is not specified"):
        got = {"n": nd.histogram(x, bins=4)}
    got["r"] = nd.histogram(x, bins=3, range=(0, 4))
    got["e"] = nd.histogram(x, bins=nd.array([0, 1, 2, 5]))
    for name, (h, e) in got.items():
        for part, arr in ((".h", h), (".e", e)):
            w = want[name + part]
            assert arr.dtype == w.dtype, (name + part, arr.dtype, w.dtype)
            np.testing.assert_allclose(arr.asnumpy(), w, rtol=1e-6, err_msg=name + part)
    bad = nd.array([1, np.inf])
    fin = np.concatenate(
        [
            nd.all_finite(x).asnumpy(),
            nd.all_finite(bad).asnumpy(),
            nd.multi_all_finite(x, bad, num_arrays=2).asnumpy(),
            nd.multi_all_finite(x, x, num_arrays=2).asnumpy(),
        ]
    )
    np.testing.assert_array_equal(fin, want["fin"])
    o = nd.array([0.0])
    nd.all_finite(x, init_output=False, out=o)
    np.testing.assert_array_equal(o.asnumpy(), want["kept"])
    crop = nd.crop(nd.array(a.reshape(2, 4)), begin=(0, 1), end=(2, 3))
    np.testing.assert_array_equal(crop.asnumpy(), want["crop"])
    with pytest.raises(mx.MXNetError, match="num_arrays=1 but 2 arrays given"):
        nd.multi_all_finite(x, bad, num_arrays=1)  # MXNet refuses this too
    with pytest.raises(mx.MXNetError, match="low end first"):
        nd.histogram(x, bins=2, range=(3, 1))


def test_svm_output_and_batch_norm_v1_match_mxnet(tmp_path):
    x = np.array([[0.5, -0.2, 2.0, 0.9], [1.5, 0.3, -3.0, -0.99]], dtype=np.float32)
    label = np.array([0, 2], dtype=np.float32)
    d = rand(4, 3, 2, 2, seed=3).astype(np.float32)
    script = """
import mxnet as mx
from mxnet import autograd
x, label = mx.nd.array(inputs["x"]), mx.nd.array(inputs["label"])
x.attach_grad()
for name, kw in [("l2", {}), ("l1", {"use_linear": True, "margin": 0.5,
                                    "regularization_coefficient": 2.0})]:
    with autograd.record():
        y = mx.nd.SVMOutput(x, label, **kw)
    y.backward()
    arrays[name + ".y"], arrays[name + ".g"] = y.asnumpy(), x.grad.asnumpy()
# MXNet's mx.nd.BatchNorm_v1 cannot take its auxiliary states imperatively: a bound symbol
sym = mx.sym.BatchNorm_v1(mx.sym.var("data"), fix_gamma=False, name="bn")
ex = sym.simple_bind(mx.cpu(), data=inputs["d"].shape)
ex.arg_dict["bn_gamma"][:] = [1.5, 0.5, 2.0]
ex.arg_dict["bn_beta"][:] = [0.1, -0.2, 0.3]
ex.aux_dict["bn_moving_var"][:] = 1
y = ex.forward(is_train=True, data=mx.nd.array(inputs["d"]))[0]
ex.backward(mx.nd.array(np.linspace(-1, 1, y.size).reshape(y.shape)))
arrays.update({"bn.y": y.asnumpy(), "bn.gd": ex.grad_dict["data"].asnumpy(),
               "bn.gg": ex.grad_dict["bn_gamma"].asnumpy(),
               "bn.gb": ex.grad_dict["bn_beta"].asnumpy(),
               "bn.mm": ex.aux_dict["bn_moving_mean"].asnumpy(),
               "bn.mv": ex.aux_dict["bn_moving_var"].asnumpy()})
"""
    _, want = mxnet_ref.run(tmp_path, script, x=x, label=label, d=d)
    xs = nd.array(x)
    xs.attach_grad()
    for name, kw in [
        ("l2", {}),
        ("l1", {"use_linear": True, "margin": 0.5, "regularization_coefficient": 2.0}),
    ]:
        with autograd.record():
            y = nd.SVMOutput(xs, nd.array(label), **kw)
        y.backward()
        np.testing.assert_array_equal(y.asnumpy(), want[name + ".y"])
        np.testing.assert_allclose(xs.grad.asnumpy(), want[name + ".g"], rtol=1e-6, err_msg=name)
    sym = mx.sym.BatchNorm_v1(mx.sym.var("data"), fix_gamma=False, name="bn")
    ex = sym.simple_bind(mx.cpu(), data=d.shape)
    ex.arg_dict["bn_gamma"][:] = nd.array([1.5, 0.5, 2.0])
    ex.arg_dict["bn_beta"][:] = nd.array([0.1, -0.2, 0.3])
    ex.aux_dict["bn_moving_var"][:] = 1
    y = ex.forward(is_train=True, data=nd.array(d))[0]
    ex.backward(nd.array(np.linspace(-1, 1, y.size).reshape(y.shape)))
    got = {
        "bn.y": y,
        "bn.gd": ex.grad_dict["data"],
        "bn.gg": ex.grad_dict["bn_gamma"],
        "bn.gb": ex.grad_dict["bn_beta"],
        "bn.mm": ex.aux_dict["bn_moving_mean"],
        "bn.mv": ex.aux_dict["bn_moving_var"],
    }
    for k, v in got.items():
        np.testing.assert_allclose(v.asnumpy(), want[k], rtol=1e-4, atol=1e-5, err_msg=k)
    ds, g, b = nd.array(d), nd.ones(3), nd.zeros(3)
    sym = mx.sym.BatchNorm_v1(mx.sym.var("data"))
    assert sym.list_arguments() == ["data", "batchnorm_v10_gamma", "batchnorm_v10_beta"]
    assert sym.list_auxiliary_states() == ["batchnorm_v10_moving_mean", "batchnorm_v10_moving_var"]
    assert mx.sym.SVMOutput(mx.sym.var("data")).list_arguments() == ["data", "svmoutput0_label"]
    with pytest.raises(mx.MXNetError, match="moving_mean and moving_var"):
        nd.BatchNorm_v1(ds, g, b)
    with pytest.raises(mx.MXNetError, match="one label per row"):
        nd.SVMOutput(xs, nd.array([0, 1, 2]))


def test_dlpack_shares_memory_both_ways():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    y = nd.from_dlpack(nd.to_dlpack_for_write(x))
    y[0, 0] = 9.0  # the consumer writes; the producer sees it
    assert x.asnumpy()[0, 0] == 9.0 and y.context == mx.cpu(0)
    host = np.arange(6.0).reshape(2, 3)[:, ::2]  # strided memory, from NumPy's own __dlpack__
    z = nd.from_dlpack(host)
    np.testing.assert_array_equal(z.asnumpy(), host)
    ints = nd.from_dlpack(nd.to_dlpack_for_read(nd.array([1, 2, 3], dtype="int64")))
    assert ints.dtype == np.int64 and ints.asnumpy().tolist() == [1, 2, 3]
    del x  # the capsule keeps the memory
    np.testing.assert_array_equal(y.asnumpy(), [[9.0, 2.0], [3.0, 4.0]])
    with pytest.raises(mx.MXNetError, match="expected a DLPack capsule"):
        nd.from_dlpack(42)


def test_rand_zipfian_counts_match_mxnet_and_samples_follow_the_law(tmp_path):
    true = np.array([3, 10, 0, 19], dtype=np.float32)
    script = """
import mxnet as mx
s, ct, cs = mx.nd.contrib.rand_zipfian(mx.nd.array(inputs["true"]), 8, 20)
arrays["ct"] = ct.asnumpy()
"""
    _, want = mxnet_ref.run(tmp_path, script, true=true)
    mx.random.seed(3)
    s, ct, cs = nd.contrib.rand_zipfian(nd.array(true), 20000, 20)
    np.testing.assert_allclose(ct.asnumpy() / 20000 * 8, want["ct"], rtol=1e-12)
    assert s.dtype == np.int64 and ct.dtype == np.float64
    drawn = s.asnumpy()
    assert drawn.min() >= 0 and drawn.max() < 20
    prob = np.log((np.arange(20) + 2.0) / (np.arange(20) + 1.0)) / np.log(21)
    np.testing.assert_allclose(cs.asnumpy(), prob[drawn] * 20000, rtol=1e-12)
    freq = np.bincount(drawn, minlength=20) / len(drawn)
    np.testing.assert_allclose(freq[:3], prob[:3], atol=0.015)  # 20000 draws: ~3 sigma
    with pytest.raises(mx.MXNetError, match="at least 1"):
        nd.contrib.rand_zipfian(nd.array(true), 0, 20)
