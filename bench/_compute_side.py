"""One measurement of ``bench/compute.py``: a Gluon model's training or inference speed on the
CPU, the same program under mxrs and under Apache MXNet 1.9.1.

Usage: ``BENCH_LIB=mxrs|mxnet python _compute_side.py --model NAME --shape C,H,W --batch N
--mode train|infer [--hybridize] [--steps N] [--warmup N]``.

The model is the seeds' LeNet of ``examples/lenet.py`` or one of ``mx.gluon.model_zoo.vision``
(``get_model(NAME, classes=10)``), initialised with ``mx.init.Xavier()`` after seeding both
RNGs, hybridized with ``hybridize()`` when asked. One random batch (numpy, fixed seed) is made
before timing. A step is a forward pass (``infer``) or a forward pass under
``autograd.record()``, ``SoftmaxCrossEntropyLoss``, ``backward()`` and ``Trainer('sgd').step``
(``train``); every step ends by reading its result (``wait_to_read()``), so MXNet's
asynchronous engine has finished the step's work before the next one starts, as mxrs has.

Prints one JSON line: ``{"lib", "samples_per_s", "secs", "steps", "batch", "mean",
"peak_rss_mb", "kernels"}``: ``mean`` is the mean of the last step's loss or outputs (a sanity
check), ``peak_rss_mb`` is this process's peak resident memory (MiB, from
``getrusage(RUSAGE_SELF)`` at exit) and ``kernels`` says which BLAS/OpenMP/oneDNN code was
loaded (:func:`kernels`).
"""

import argparse
import ctypes
import importlib
import json
import os
import re
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples"))
from lenet import lenet  # noqa: E402  (examples/lenet.py, the one definition of the seeds' LeNet)

CLASSES = 10
# shared libraries worth naming: BLAS, OpenMP runtimes, oneDNN, MXNet itself
KERNEL_LIBS = re.compile(r"blas|mkl|dnnl|onednn|gomp|iomp|libomp|lapack|libmxnet", re.I)
FEATURES = ("MKLDNN", "ONEDNN", "OPENMP", "BLAS_OPEN", "BLAS_MKL", "BLAS_ATLAS", "BLAS_APPLE")


def build(mx, args):
    """Return (net, data, label) for ``args``: the model, initialised, hybridized if asked."""
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    if args.model == "lenet":
        net = lenet(mx.gluon.nn, CLASSES)
    else:
        net = mx.gluon.model_zoo.vision.get_model(args.model, classes=CLASSES)
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    if args.hybridize:
        net.hybridize()
    rng = np.random.RandomState(args.seed)
    shape = (args.batch, *args.shape)
    data = mx.nd.array(rng.uniform(0, 1, size=shape).astype(np.float32))
    label = mx.nd.array(rng.randint(0, CLASSES, size=args.batch).astype(np.float32))
    return net, data, label


def make_step(mx, net, data, label, mode):
    """A function running one step of ``mode`` and returning its (finished) result."""
    if mode == "infer":

        def infer():
            out = net(data)
            out.wait_to_read()
            return out

        return infer
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9}, kvstore="local"
    )

    def train():
        with mx.autograd.record():
            loss = loss_fn(net(data), label)
        loss.backward()
        trainer.step(data.shape[0])
        loss.wait_to_read()
        return loss

    return train


def _loaded_libraries():
    """Paths of the kernel libraries mapped into this process (from ``/proc/self/maps``)."""
    paths = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                path = parts[5].strip() if len(parts) == 6 else ""
                name = os.path.basename(path)
                # Python extension modules (numpy's, scipy's) only link the libraries below
                if ".so" in name and ".cpython-" not in name and KERNEL_LIBS.search(name):
                    paths.add(path)
    except OSError:
        pass
    return sorted(paths)


def _symbol(lib, name):
    """``lib``'s function ``name``, also under the prefix and suffixes some builds give it
    (scipy-openblas: ``scipy_openblas_get_config64_``), as threadpoolctl looks for it."""
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            fn = getattr(lib, prefix + name + suffix, None)
            if fn is not None:
                return fn
    return None


def _openblas(paths):
    """``openblas_get_config()`` and ``openblas_get_corename()`` as the loaded libraries answer
    them (numpy's bundled OpenBLAS, or the one ``libmxnet.so`` calls), one entry per distinct
    answer with the libraries that gave it."""
    found: dict = {}
    for path in paths:
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        except OSError:
            continue
        answer = {}
        for name in ("config", "corename"):
            fn = _symbol(lib, f"openblas_get_{name}")
            if fn is not None:
                fn.restype = ctypes.c_char_p
                answer[name] = " ".join(fn().decode(errors="replace").split())
        if answer:
            entry = found.setdefault(tuple(answer.items()), {**answer, "libraries": []})
            entry["libraries"].append(os.path.basename(path))
    return list(found.values())


def kernels(mx):
    """What computes here: threadpoolctl's view when it is importable (else ``"unknown"``),
    the kernel libraries mapped into the process, OpenBLAS's own config and core name, the
    library's build features (MXNet's ``mx.runtime.Features``) and ``MXRS_KERNELS``."""
    try:
        import threadpoolctl
    except ImportError:
        pools = "unknown"
    else:
        keys = ("internal_api", "version", "architecture", "num_threads", "filepath")
        pools = [{k: d.get(k) for k in keys} for d in threadpoolctl.threadpool_info()]
    paths = _loaded_libraries()
    features = None
    try:
        feats = mx.runtime.Features()
        features = sorted(f for f in FEATURES if f in feats and feats.is_enabled(f))
    except Exception:  # noqa: BLE001  (mxrs may lack the API; the field is informative only)
        pass
    return {
        "threadpoolctl": pools,
        "loaded": [os.path.basename(p) for p in paths],
        "openblas": _openblas(paths),
        "features": features,
        "MXRS_KERNELS": os.environ.get("MXRS_KERNELS"),
        "numpy": np.__version__,
    }


def timed(mx, step, warmup, steps):
    """``(last output, seconds)`` of ``steps`` calls of ``step`` after ``warmup`` untimed ones,
    waiting for all pending work before and after."""
    for _ in range(warmup):
        step()
    mx.nd.waitall()
    t0 = time.perf_counter()
    out = None
    for _ in range(steps):
        out = step()
    mx.nd.waitall()
    return out, time.perf_counter() - t0


def main(argv=None):
    """Parse the options, build, warm up, time the steps and print the JSON line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="lenet or a model zoo name")
    ap.add_argument("--shape", required=True, help="C,H,W of one sample")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--mode", choices=("train", "infer"), required=True)
    ap.add_argument("--hybridize", action="store_true")
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.shape = tuple(int(s) for s in args.shape.split(","))
    lib = os.environ.get("BENCH_LIB", "mxrs")
    mx = importlib.import_module(lib)
    net, data, label = build(mx, args)
    step = make_step(mx, net, data, label, args.mode)
    out, secs = timed(mx, step, args.warmup, args.steps)
    mean = float(out.mean().asnumpy().reshape(-1)[0])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    result = {
        "lib": lib,
        "samples_per_s": args.batch * args.steps / secs,
        "secs": secs,
        "steps": args.steps,
        "batch": args.batch,
        "mean": mean,
        "peak_rss_mb": peak,
        "kernels": kernels(mx),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
