"""Apache MXNet 1.9.1, run beside mxrs as the reference of the differential tests.

MXNet lives in its own virtualenv (``bench/.venv-mxnet``, made by ``bench/setup_mxnet.sh``,
which ``test.sh`` runs), so a reference computation is a separate process: :func:`run` hands it
input arrays, runs a script there and returns what the script left in ``result`` (anything JSON
can carry) and ``arrays`` (NumPy arrays by name).
"""

import json
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
MXNET_PYTHON = ROOT / "bench" / ".venv-mxnet" / "bin" / "python"

_PRELUDE = """
import json, sys
import numpy as np
inputs = dict(np.load(sys.argv[1]))
result, arrays = None, {}
"""

_EPILOGUE = """
np.savez(sys.argv[2], **{k: np.asarray(v) for k, v in arrays.items()})
with open(sys.argv[3], "w") as f:
    json.dump(result, f)
"""


def python() -> str:
    """The interpreter with MXNet 1.9.1; fails the test, saying how to set it up, without it."""
    if not MXNET_PYTHON.exists():
        pytest.fail(
            "Apache MXNet 1.9.1, the reference of this test, is not set up: run "
            "`bash bench/setup_mxnet.sh` (test.sh does)"
        )
    return str(MXNET_PYTHON)


def run(tmp_path, script, timeout=300, **inputs):
    """Run ``script`` under MXNet 1.9.1 with ``inputs`` (arrays by name, as the dict ``inputs``);
    returns ``(result, arrays)`` as the script set them. A failing script fails the test with
    its output."""
    src, inp, out, res = (tmp_path / n for n in ("ref.py", "in.npz", "out.npz", "out.json"))
    src.write_text(_PRELUDE + textwrap.dedent(script) + _EPILOGUE)
    np.savez(inp, **{k: np.asarray(v) for k, v in inputs.items()})
    for _ in range(2):
        proc = subprocess.run(
            [python(), str(src), str(inp), str(out), str(res)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=tmp_path,
        )
        # MXNet 1.9.1's threaded image decoding crashes now and then on a loaded machine
        # (its own "Segmentation fault: 11"): the same script runs once more, once.
        if "Segmentation fault" not in proc.stderr:
            break
    if proc.returncode != 0:
        pytest.fail(
            f"the MXNet 1.9.1 reference failed:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
        )
    with np.load(out) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(res.read_text()), arrays


def check_body(tmp_path, body, inputs, rtol, atol):
    """Run ``body`` under MXNet 1.9.1 and under mxrs (as ``mx``, with ``np``, ``json`` and the
    dict ``inputs``), each filling ``arrays``; assert that both fill the same names with arrays
    of one shape, equal within ``rtol``/``atol``. Returns MXNet's arrays."""
    import mxrs

    _, want = run(tmp_path, "import mxnet as mx\n" + body, **inputs)
    got: dict = {}
    exec(body, {"mx": mxrs, "np": np, "json": json, "inputs": inputs, "arrays": got})
    assert sorted(got) == sorted(want), (sorted(got), sorted(want))
    for key in sorted(got):
        assert got[key].shape == want[key].shape, (key, got[key].shape, want[key].shape)
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=key)
    return want


def run_sections(tmp_path, sections, setup, **inputs):
    """Run every section of ``sections`` (name -> code, each after ``setup``, in a namespace
    with ``mx``, ``inputs`` and fresh ``arrays`` and ``result``) under MXNet 1.9.1 in one
    process; returns ``{name: (arrays, result)}``."""
    script = f"""
import mxnet as mx
sections = json.loads({json.dumps(json.dumps(sections))})
result = {{}}
for name, code in sections.items():
    ns = {{'mx': mx, 'inputs': inputs, 'arrays': {{}}, 'result': {{}}}}
    exec({setup!r}, ns)
    exec(code, ns)
    for key, value in ns['arrays'].items():
        arrays[name + '::' + key] = value
    result[name] = ns['result']
"""
    res, arrs = run(tmp_path, script, **inputs)
    by_section = {name: ({}, res[name]) for name in sections}
    for key, value in arrs.items():
        name, sub = key.split("::", 1)
        by_section[name][0][sub] = value
    return by_section


def mxrs_section(code, setup, **inputs):
    """Run one section as :func:`run_sections` does, under mxrs; returns ``(arrays, result)``
    with the result through JSON, as MXNet's comes back."""
    import warnings

    import mxrs

    ns = {"mx": mxrs, "inputs": inputs, "arrays": {}, "result": {}}
    with warnings.catch_warnings():
        exec(setup, ns)
        exec(code, ns)
    return ns["arrays"], json.loads(json.dumps(ns["result"]))
