"""Sparse Parameters in Gluon (``stype``, ``grad_stype``, ``nn.Embedding(sparse_grad=True)``)
and the Trainer's sparse paths, against Apache MXNet 1.9.1.

The training scenarios are one piece of code (``_SCENARIOS``) run twice: under MXNet 1.9.1 in its
own process (``mxnet_ref``) and here under mxrs, and the weights must agree. The cases with
momentum, Adam or weight decay on sparse gradients follow MXNet's lazy updates (only the rows a
batch touched change), which the optimizers provide.
"""

import json
import textwrap

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, gluon
from mxrs.base import MXNetError
from mxrs.gluon import nn

RNG = np.random.default_rng(5)
VOCAB, DIM, OUT = 12, 3, 2
EMB0 = RNG.uniform(-1, 1, (VOCAB, DIM)).astype(np.float32)
W0 = RNG.uniform(-1, 1, (OUT, 2 * DIM)).astype(np.float32)
B0 = RNG.uniform(-1, 1, OUT).astype(np.float32)
# three batches of 4 rows of 2 ids; each step touches other rows (rows 1 and 5 often)
IDS = np.array(
    [
        [[1, 5], [5, 7], [2, 2], [9, 0]],
        [[3, 3], [1, 11], [4, 6], [6, 6]],
        [[7, 8], [1, 10], [5, 0], [2, 9]],
    ],
    dtype=np.float32,
)
LABELS = RNG.uniform(-1, 1, (3, 4, OUT)).astype(np.float32)
INPUTS = {"emb0": EMB0, "w0": W0, "b0": B0, "ids": IDS, "labels": LABELS}

_SCENARIOS = '''
def make_net(mx, sparse_weight, ctxs, inputs):
    """Embedding -> tanh -> Dense. The embedding is a dense weight with sparse_grad (False), a
    row_sparse weight read through row_sparse_data (True), or the sum of the two ('both')."""
    V, D = inputs["emb0"].shape

    class Net(mx.gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                if sparse_weight:
                    self.table = self.params.get(
                        "table", shape=(V, D), stype="row_sparse", grad_stype="row_sparse"
                    )
                if sparse_weight != True:  # noqa: E712  (False or 'both')
                    self.emb = mx.gluon.nn.Embedding(V, D, sparse_grad=True)
                self.out = mx.gluon.nn.Dense(inputs["w0"].shape[0], in_units=2 * D)

        def forward(self, x):
            parts = []
            if sparse_weight:
                w = self.table.row_sparse_data(x)
                parts.append(mx.nd.Embedding(x, w, input_dim=V, output_dim=D, sparse_grad=True))
            if sparse_weight != True:  # noqa: E712
                parts.append(self.emb(x))
            e = parts[0] if len(parts) == 1 else parts[0] + parts[1]
            return self.out(e.tanh())

    net = Net(prefix="net_")
    net.initialize(mx.init.Zero(), ctx=ctxs)
    if sparse_weight:
        net.table.set_data(mx.nd.array(inputs["emb0"]))
    if sparse_weight != True:  # noqa: E712
        net.emb.weight.set_data(mx.nd.array(inputs["emb0"][::-1].copy()))  # another start
    net.out.weight.set_data(mx.nd.array(inputs["w0"]))
    net.out.bias.set_data(mx.nd.array(inputs["b0"]))
    return net


def table(mx, net, ctx):
    """The embedding table on ``ctx`` as NumPy."""
    if hasattr(net, "table"):
        rows = mx.nd.arange(0, net.table.shape[0], ctx=ctx)
        return net.table.row_sparse_data(rows).asnumpy()
    return net.emb.weight.data(ctx).asnumpy()


def train(mx, case, inputs, tmpdir):
    """Train ``case`` for three steps; return its weights (by name) and the store chosen."""
    ctxs = [mx.cpu(i) for i in range(case["nctx"])]
    net = make_net(mx, case["sparse_weight"], ctxs, inputs)
    trainer = mx.gluon.Trainer(
        net.collect_params(), case["opt"], dict(case["params"]), kvstore=case["kv"],
        update_on_kvstore=case["uok"],
    )
    for step in range(inputs["ids"].shape[0]):
        xs = mx.gluon.utils.split_and_load(inputs["ids"][step], ctxs)
        ys = mx.gluon.utils.split_and_load(inputs["labels"][step], ctxs)
        with mx.autograd.record():
            losses = [((net(x) - y) ** 2).sum() for x, y in zip(xs, ys)]
        mx.autograd.backward(losses)
        trainer.step(4)
        if step == 1 and case.get("states"):  # states survive a round trip through a file
            trainer.save_states(tmpdir + "/trainer.states")
            trainer.load_states(tmpdir + "/trainer.states")
    out = {"table": table(mx, net, ctxs[-1]), "weight": net.out.weight.data(ctxs[-1]).asnumpy(),
           "bias": net.out.bias.data(ctxs[-1]).asnumpy()}
    if case.get("save"):  # the trained net saved, loaded into a fresh one
        net.save_parameters(tmpdir + "/net.params")
        fresh = make_net(mx, case["sparse_weight"], ctxs, inputs)
        fresh.load_parameters(tmpdir + "/net.params", ctx=ctxs)
        if case["sparse_weight"]:
            mx.gluon.Trainer(fresh.collect_params(), "sgd", kvstore=case["kv"])
        out["loaded"] = table(mx, fresh, ctxs[0])
    kv = trainer._kvstore
    meta = [None if kv is None else kv.type, trainer._update_on_kvstore]
    return out, meta
'''

SGD = ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01})
ADAM = ("adam", {"learning_rate": 0.05, "wd": 0.01})


def _case(opt, kv, nctx, sparse_weight=False, uok=None, **extra):
    return {
        "opt": opt[0],
        "params": opt[1],
        "kv": kv,
        "nctx": nctx,
        "sparse_weight": sparse_weight,
        "uok": uok,
        **extra,
    }


CASES = [
    _case(opt, kv, nctx, sw)
    for sw in (False, True)
    for opt in (SGD, ADAM)
    for kv in ("local", "device")
    for nctx in (1, 2)
] + [
    _case(SGD, "local", 2, uok=True),  # dense weight, sparse gradients, updated in the store
    _case(ADAM, "device", 2, uok=True),
    _case(SGD, "device", 2, states=True, save=True),
    _case(ADAM, "local", 2, sparse_weight=True, states=True, save=True),
    _case(SGD, "device", 1, sparse_weight=True, states=True, save=True),
]


def _id(c):
    weight = "rsp_weight" if c["sparse_weight"] else "rsp_grad"
    extra = "-".join(k for k in ("states", "save") if c.get(k))
    uok = "" if c["uok"] is None else f"-uok{c['uok']}"
    return f"{weight}-{c['opt']}-{c['kv']}-{c['nctx']}ctx{uok}{'-' if extra else ''}{extra}"


def _scenarios():
    scope = {}
    exec(_SCENARIOS, scope)
    return scope


@pytest.fixture(scope="module")
def mxnet_results(tmp_path_factory):
    """Every case trained under MXNet 1.9.1: ({case id: meta}, {case id + '.' + name: array})."""
    tmp = tmp_path_factory.mktemp("mxnet")
    script = textwrap.dedent(_SCENARIOS) + textwrap.dedent(
        """
            import os, mxnet
            result = {}
            for i, case in enumerate(json.loads(str(inputs["cases"]))):
                d = os.path.abspath(f"case{i}")
                os.makedirs(d)
                out, result[case["id"]] = train(mxnet, case, inputs, d)
                arrays.update({case["id"] + "." + k: v for k, v in out.items()})
            """
    )
    cases = json.dumps([{**c, "id": _id(c)} for c in CASES])
    return mxnet_ref.run(tmp, script, cases=np.array(cases), **INPUTS)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_training_matches_mxnet(case, mxnet_results, tmp_path):
    meta_want, arrays = mxnet_results
    got, meta = _scenarios()["train"](mx, case, INPUTS, str(tmp_path))
    assert meta == meta_want[_id(case)]
    for name, value in got.items():
        want = arrays[f"{_id(case)}.{name}"]
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert not np.allclose(got["table"], EMB0)  # it trained


def test_store_choice_follows_mxnet():
    """The kvstore and update_on_kvstore that MXNet 1.9.1's rules pick."""
    run = _scenarios()["train"]
    tiny = dict(INPUTS, ids=IDS[:1], labels=LABELS[:1])
    table = {
        (False, "device", 1, None): [None, None],  # one device, dense weight: no store
        (False, "device", 2, None): ["device", False],  # the workers update
        (False, "local", 2, True): ["local", True],
        (True, "local", 1, None): ["local", True],  # a store even for one device
        (True, "device", 2, None): ["device", True],
    }
    for (sw, kv, nctx, uok), want in table.items():
        _, meta = run(mx, _case(SGD, kv, nctx, sw, uok), tiny, "")
        assert meta == want, (sw, kv, nctx, uok)


# ------------------------------------------------------------------ gradients and buffers
def test_sparse_grad_embedding_gives_exactly_the_looked_up_rows():
    emb = nn.Embedding(VOCAB, DIM, sparse_grad=True)
    emb.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert emb.weight.grad_stype == "row_sparse" and emb.weight.stype == "default"
    ids = mx.nd.array([[1, 5], [5, 7]], ctx=mx.cpu(1))
    with autograd.record():
        out = emb(ids)
    out.backward(mx.nd.ones(out.shape, ctx=mx.cpu(1)) * 2)
    g = emb.weight.grad(mx.cpu(1))
    assert g.stype == "row_sparse"
    np.testing.assert_array_equal(g.indices.asnumpy(), [1, 5, 7])
    np.testing.assert_array_equal(g.data.asnumpy(), [[2] * DIM, [4] * DIM, [2] * DIM])
    assert emb.weight.grad(mx.cpu(0)).indices.shape == (0,)  # the other copy: untouched
    emb.weight.zero_grad()
    assert g.stype == "row_sparse" and g.indices.shape == (0,) and not g.asnumpy().any()
    assert nn.Embedding(4, 2).weight.grad_stype == "default"


def test_row_sparse_weight_is_initialised_densely_then_stored_sparse():
    p = gluon.Parameter("w", shape=(6, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.Constant(3.0), ctx=[mx.cpu(0), mx.cpu(1)])
    arrs = p._check_and_get(p._data, list)
    assert [a.stype for a in arrs] == ["row_sparse"] * 2
    assert [g.stype for g in p.list_grad()] == ["row_sparse"] * 2
    np.testing.assert_array_equal(arrs[1].asnumpy(), np.full((6, 2), 3.0))
    p.cast("float64")
    assert arrs[0].dtype == np.float64 and p.list_grad()[0].dtype == np.float64
    assert arrs[0].stype == "row_sparse" and p._check_and_get(p._data, list)[0] is arrs[0]
    csr = gluon.Parameter("c", shape=(3, 4), stype="csr", grad_stype="csr")
    csr.initialize(init="zeros")
    assert csr._data[0].stype == "csr" and csr.grad().stype == "csr"


def test_row_sparse_data_fills_the_parameters_own_array_with_the_rows_asked():
    p = gluon.Parameter("w", shape=(8, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    ids = mx.nd.array([6, 2, 6], ctx=mx.cpu(1))
    w = p.row_sparse_data(ids)
    assert w is p._data[1] and w.context == mx.cpu(1)
    np.testing.assert_array_equal(w.indices.asnumpy(), [2, 6])
    ws = p.list_row_sparse_data(mx.nd.array([0]))
    assert ws == p._data and [a.indices.asnumpy().tolist() for a in ws] == [[0], [0]]
    with autograd.record():
        ys = [
            mx.nd.Embedding(mx.nd.array([0], ctx=a.context), a, 8, 2, sparse_grad=True) for a in ws
        ]
    autograd.backward(ys)
    assert [g.indices.asnumpy().tolist() for g in p.list_grad()] == [[0], [0]]
    trainer.step(1)
    full = p.row_sparse_data(mx.nd.arange(0, 8))
    np.testing.assert_array_equal(full.asnumpy()[:, 0], [-1, 1, 1, 1, 1, 1, 1, 1])


def test_allreduce_grads_sums_the_rows_and_update_applies_them():
    emb = nn.Embedding(6, 2, sparse_grad=True, weight_initializer="zeros")
    ctxs = [mx.cpu(0), mx.cpu(1)]
    emb.initialize(ctx=ctxs)
    trainer = gluon.Trainer(
        emb.collect_params(), "sgd", {"learning_rate": 1.0}, "local", update_on_kvstore=False
    )
    with autograd.record():
        ys = [emb(mx.nd.array([i], ctx=c)) for i, c in zip((1, 4), ctxs, strict=True)]
    autograd.backward(ys)
    trainer.allreduce_grads()
    for g in emb.weight.list_grad():
        assert g.stype == "row_sparse" and g.indices.asnumpy().tolist() == [1, 4]
        np.testing.assert_array_equal(g.data.asnumpy(), np.ones((2, 2)))
    trainer.update(1)
    want = np.zeros((6, 2), np.float32)
    want[[1, 4]] = -1
    for w in emb.weight.list_data():
        np.testing.assert_array_equal(w.asnumpy(), want)


def test_grad_req_add_merges_rows_until_zero_grad():
    emb = nn.Embedding(6, 2, sparse_grad=True)
    emb.initialize()
    emb.weight.grad_req = "add"
    for ids in ([1, 1], [3]):
        with autograd.record():
            y = emb(mx.nd.array(ids))
        y.backward()
    g = emb.weight.grad()
    assert g.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(g.data.asnumpy(), [[2, 2], [1, 1]])
    emb.collect_params().zero_grad()
    assert g.indices.shape == (0,) and emb.weight.grad() is g


def test_set_data_on_a_sparse_weight_resets_the_store():
    p = gluon.Parameter("w", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.One())
    trainer = gluon.Trainer([p], "sgd", {"learning_rate": 1.0})
    rows = mx.nd.arange(0, 4)
    with autograd.record():
        y = p.row_sparse_data(rows) * 2
    y.backward()
    trainer.step(1)
    np.testing.assert_array_equal(p.row_sparse_data(rows).asnumpy(), np.full((4, 2), -1.0))
    p.set_data(mx.nd.full((4, 2), 5.0))
    assert trainer._kvstore is None and not trainer._kv_initialized
    np.testing.assert_array_equal(p.row_sparse_data(rows).asnumpy(), np.full((4, 2), 5.0))


def test_the_trainer_pulls_only_the_rows_a_batch_needs():
    """A row_sparse weight is never pulled whole while training: each step pushes gradients and
    ``row_sparse_data`` fetches the rows of the next batch."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = _scenarios()["make_net"](mx, True, ctxs, INPUTS)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    trainer._init_kvstore()
    kv = trainer._kvstore
    table_key = trainer._param2idx[net.table.name]
    pulled, rows = [], []

    def pull(key, out=None, priority=0, ignore_sparse=True, _pull=kv.pull):
        pulled.extend(key if isinstance(key, list) else [key])
        _pull(key, out, priority, ignore_sparse)

    def row_sparse_pull(key, out=None, priority=0, row_ids=None, _rsp=kv.row_sparse_pull):
        rows.append(np.unique(row_ids.asnumpy()).tolist())
        _rsp(key, out, priority, row_ids)

    kv.pull, kv.row_sparse_pull = pull, row_sparse_pull
    for step in range(2):
        xs = gluon.utils.split_and_load(IDS[step], ctxs)
        with autograd.record():
            losses = [net(x).sum() for x in xs]
        autograd.backward(losses)
        trainer.step(4)
    assert table_key not in pulled
    want = [np.unique(IDS[s][h * 2 : h * 2 + 2]).tolist() for s in range(2) for h in range(2)]
    assert rows == want


def test_the_overlap_stream_leaves_sparse_parameters_to_step():
    net = _scenarios()["make_net"](mx, False, [mx.cpu(0)], INPUTS)
    trainer = gluon.Trainer(net.collect_params(), "sgd", kvstore="device")
    trainer._init_kvstore()
    trainer._distributed, trainer._overlap, trainer._contexts = True, True, [mx.cpu(0)]
    trainer._arm()
    try:
        assert not hasattr(net.emb.weight.data(), "_on_grad")
        assert hasattr(net.out.weight.data(), "_on_grad")
    finally:
        trainer._stream.disarm()


# ------------------------------------------------------------------ save and load
def test_parameter_files_interoperate_with_mxnet(tmp_path):
    """mxrs writes a row_sparse weight dense (its nd.save has no sparse arrays), which MXNet
    loads into its row_sparse Parameter; dense MXNet files load into both kinds here. A file
    where MXNet wrote a row_sparse array needs sparse support in ``nd.load``."""
    sc = _scenarios()
    ctxs = [mx.cpu(0)]
    net = sc["make_net"](mx, True, ctxs, INPUTS)
    gluon.Trainer(net.collect_params(), "sgd")
    net.save_parameters(str(tmp_path / "mxrs_sparse.params"))
    script = textwrap.dedent(_SCENARIOS) + textwrap.dedent(
        """
        import mxnet
        net = make_net(mxnet, True, [mxnet.cpu(0)], inputs)
        net.load_parameters("mxrs_sparse.params")
        mxnet.gluon.Trainer(net.collect_params(), "sgd")
        arrays["sparse_loaded"] = table(mxnet, net, mxnet.cpu(0))
        net.save_parameters("mxnet_sparse.params")  # holds a row_sparse array
        dense = make_net(mxnet, False, [mxnet.cpu(0)], inputs)
        dense.emb.weight.set_data(mxnet.nd.array(inputs["emb0"]) * 2)
        dense.save_parameters("mxnet_dense.params")
        w, b = dense.out.weight.data(), dense.out.bias.data()
        table = dense.emb.weight.data()
        mxnet.nd.save("mxnet_table.params", {"table": table, "out.weight": w, "out.bias": b})
        """
    )
    _, arrays = mxnet_ref.run(tmp_path, script, **INPUTS)
    np.testing.assert_array_equal(arrays["sparse_loaded"], EMB0)
    for sparse_weight, fname in ((False, "mxnet_dense"), (True, "mxnet_table")):
        fresh = sc["make_net"](mx, sparse_weight, ctxs, dict(INPUTS, emb0=np.zeros_like(EMB0)))
        fresh.load_parameters(str(tmp_path / f"{fname}.params"))
        if sparse_weight:
            gluon.Trainer(fresh.collect_params(), "sgd")
        np.testing.assert_array_equal(sc["table"](mx, fresh, mx.cpu(0)), EMB0 * 2)
    try:
        loaded = mx.nd.load(str(tmp_path / "mxnet_sparse.params"))
    except MXNetError as e:  # mxrs's nd.load has no sparse arrays (yet)
        assert "row_sparse" in str(e)
    else:
        np.testing.assert_array_equal(loaded["table"].asnumpy(), EMB0)


def test_parameter_dict_save_load_keeps_the_storage_type(tmp_path):
    params = gluon.ParameterDict("p_")
    w = params.get("w", shape=(5, 2), stype="row_sparse", grad_stype="row_sparse")
    params.initialize(init=mx.init.Constant(2.0), ctx=[mx.cpu(0), mx.cpu(1)])
    params.save(str(tmp_path / "p.params"))  # no trainer: the copies' mean
    saved = mx.nd.load(str(tmp_path / "p.params"))["p_w"]  # written dense by mxrs, for now
    np.testing.assert_array_equal(saved.asnumpy(), np.full((5, 2), 2.0))
    w.set_data(mx.nd.zeros((5, 2)))
    params.load(str(tmp_path / "p.params"))
    arrs = w._check_and_get(w._data, list)
    assert [a.stype for a in arrs] == ["row_sparse"] * 2
    np.testing.assert_array_equal(arrs[1].asnumpy(), np.full((5, 2), 2.0))


# ------------------------------------------------------------------ errors
def test_sparse_weights_refuse_dense_access_and_bad_configurations():
    p = gluon.Parameter("w", shape=(4, 2), stype="row_sparse")
    p.initialize()
    with pytest.raises(MXNetError, match=r"via data\(\).*row_sparse_data\(\)"):
        p.data()
    with pytest.raises(RuntimeError, match=r"via list_data\(\)"):
        p.list_data()
    with pytest.raises(RuntimeError, match="no Trainer is created"):
        p.row_sparse_data(mx.nd.array([0]))
    dense = gluon.Parameter("d", shape=(4, 2))
    dense.initialize()
    with pytest.raises(RuntimeError, match=r"Please use data\(\) instead"):
        dense.row_sparse_data(mx.nd.array([0]))
    bad = gluon.Trainer([p], "sgd", update_on_kvstore=False)
    with pytest.raises(ValueError, match="update_on_kvstore=False when sparse weights"):
        p.row_sparse_data(mx.nd.array([0]))
    p._set_trainer(None)
    trainer = gluon.Trainer([p], "sgd")
    with pytest.raises(TypeError, match="row_id must have NDArray type"):
        p.row_sparse_data([0])
    with pytest.raises(RuntimeError, match="More than one trainers"):
        gluon.Trainer([p], "sgd")
    assert p._trainer is trainer and bad is not trainer
    with pytest.raises(AssertionError, match="stype for Parameter 'x' must be one of"):
        gluon.Parameter("x", stype="dense")
    with pytest.raises(AssertionError, match="grad_stype for Parameter 'x'"):
        gluon.Parameter("x", grad_stype="sparse")


def test_sparse_gradients_on_a_store_without_sparse_support_are_refused():
    emb = nn.Embedding(4, 2, sparse_grad=True)
    emb.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer(emb.collect_params(), "sgd", kvstore=mx.kv.create("teststore"))
    with pytest.raises(ValueError, match="multi-device training with sparse gradients"):
        trainer._init_kvstore()
    rsp = gluon.Parameter("t", shape=(4, 2), stype="row_sparse")
    rsp.initialize()
    trainer = gluon.Trainer([rsp], "sgd", kvstore=mx.kv.create("teststore"))
    with pytest.raises(AssertionError, match="requires optimizer support"):
        trainer._init_kvstore()


# ------------------------------------------------------------------ distributed
DIST_WORKER = f"""
import json, sys
import numpy as np
import mxrs as mx
sys.path.insert(0, {str(__import__("os").path.dirname(__file__))!r})
from test_gluon_sparse import INPUTS, _scenarios

sc = _scenarios()
sparse_weight, opt, opt_params = json.loads(sys.argv[1])
kv = mx.kv.create("dist_sync")
r = kv.rank
net = sc["make_net"](mx, sparse_weight, [mx.cpu(0)], INPUTS)
trainer = mx.gluon.Trainer(net.collect_params(), opt, opt_params, kvstore=kv)
trainer._init_kvstore()
calls = []
pull, rsp_pull = kv.pull, kv.row_sparse_pull
kv.pull = lambda k, out=None, priority=0, ignore_sparse=True: (
    calls.append(["pull", k]), pull(k, out, priority, ignore_sparse))
kv.row_sparse_pull = lambda k, out=None, priority=0, row_ids=None: (
    calls.append(["rows", k, np.unique(row_ids.asnumpy()).tolist()]),
    rsp_pull(k, out, priority, row_ids))
for step in range(3):
    x = mx.nd.array(INPUTS["ids"][step][2 * r : 2 * r + 2])
    y = mx.nd.array(INPUTS["labels"][step][2 * r : 2 * r + 2])
    with mx.autograd.record():
        loss = ((net(x) - y) ** 2).sum()
    loss.backward()
    trainer.step(4)
np.savez(f"final{{r}}.npz", table=sc["table"](mx, net, mx.cpu(0)),
         weight=net.out.weight.data().asnumpy())
key = trainer._param2idx["net_table" if sparse_weight else "net_embedding0_weight"]
with open(f"calls{{r}}.json", "w") as f:
    json.dump([calls, trainer._update_on_kvstore, key], f)
print("ok", r, flush=True)
"""


@pytest.mark.parametrize(
    "sparse_weight,opt",
    [
        (True, ADAM),
        (True, SGD),
        (False, ("sgd", {"learning_rate": 0.1})),
        (False, SGD),
    ],
    ids=["rsp_weight-adam", "rsp_weight-sgd", "rsp_grad-sgd-plain", "rsp_grad-sgd-lazy"],
)
def test_dist_sync_trains_sparse_parameters_like_one_process(tmp_path, sparse_weight, opt):
    """2 workers and 2 servers train as two devices of one process with a 'local' store
    (updating in the store, as a distributed one does); a row_sparse weight is never pulled
    whole while training, only the rows each batch needs."""
    from jobs import launch

    proc = launch(tmp_path, DIST_WORKER, args=(json.dumps([sparse_weight, *opt]),))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    ctxs = [mx.cpu(0), mx.cpu(1)]
    sc = _scenarios()
    net = sc["make_net"](mx, sparse_weight, ctxs, INPUTS)
    trainer = gluon.Trainer(net.collect_params(), *opt, kvstore="local", update_on_kvstore=True)
    for step in range(3):
        xs = gluon.utils.split_and_load(IDS[step], ctxs)
        ys = gluon.utils.split_and_load(LABELS[step], ctxs)
        with autograd.record():
            losses = [((net(x) - y) ** 2).sum() for x, y in zip(xs, ys, strict=True)]
        autograd.backward(losses)
        trainer.step(4)
    want = {"table": sc["table"](mx, net, mx.cpu(0)), "weight": net.out.weight.data().asnumpy()}
    for r in range(2):
        with np.load(tmp_path / f"final{r}.npz") as got:
            for k, v in want.items():
                np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6, err_msg=f"{k} {r}")
        calls, update_on_kvstore, key = json.loads((tmp_path / f"calls{r}.json").read_text())
        assert update_on_kvstore is True
        pulled = [k for c in calls if c[0] == "pull" for k in np.ravel(c[1]).tolist()]
        asked = [c[2] for c in calls if c[0] == "rows"]
        if sparse_weight:
            assert key not in pulled  # never the whole table while training
            want_rows = [np.unique(IDS[s][2 * r : 2 * r + 2]).tolist() for s in range(3)]
            assert asked == [*want_rows, list(range(VOCAB))]  # the batches', then all to check
        else:
            assert pulled.count(key) == 4 and not asked  # init, then the weights of each step
