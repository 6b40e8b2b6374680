"""MXNet 1.9.1's Gluon word-language-model example (an LSTM language model on WikiText-2 with
``contrib.data.text.WikiText2`` and ``IntervalSampler``), unchanged, with ``import mxnet``
meaning mxrs: it trains on a small corpus in WikiText-2's file format that the test writes,
its validation perplexity falls, and it trains the same way as two workers of a dist_sync job
with two servers (``MXRS_KVSTORE=dist_sync MXRS_OVERLAP=0`` under ``mxrs-launch``).

The script and the shim are read from ``../shared`` (see ``../shared/mxnet-examples/README.md``).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
EXAMPLE = SHARED / "mxnet-examples" / "gluon" / "word_language_model"
SHIM = SHARED / "mxnet-tests" / "shim"
TIMEOUT = 600

pytestmark = pytest.mark.skipif(
    not EXAMPLE.is_dir(), reason="MXNet's example scripts live in ../shared, not beside this clone"
)

ARGS = ["--emsize", "24", "--nhid", "24", "--nlayers", "2", "--epochs", "4",
        "--batch_size", "8", "--bptt", "12", "--dropout", "0.1", "--log-interval", "20",
        "--tied"]  # fmt: skip


def _sentence(rng):
    """A sentence of a small grammar: subject, verb, object, sometimes a place; the words
    after each one are few, so a model can learn to predict them."""
    det = ["the", "a"]
    nouns = ["cat", "dog", "bird", "child", "farmer", "teacher", "horse", "river", "house"]
    verbs = ["sees", "likes", "follows", "finds", "feeds", "paints", "watches"]
    places = ["in the garden", "near the house", "by the river", "at night", "on the hill"]
    words = [rng.choice(det), rng.choice(nouns), rng.choice(verbs), rng.choice(det)]
    words.append(rng.choice(nouns))
    if rng.random() < 0.5:
        words.append(rng.choice(places))
    return " ".join(words) + " ."


def write_corpus(folder, seed=3):
    """WikiText-2's three token files: headings and paragraphs of sentences, one per line."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, paragraphs in (("wiki.train.tokens", 160), ("wiki.valid.tokens", 20),
                             ("wiki.test.tokens", 20)):  # fmt: skip
        lines = [""]
        for p in range(paragraphs):
            if p % 8 == 0:
                lines += [f" = Section {p // 8} = ", ""]
            lines.append(" " + " ".join(_sentence(rng) for _ in range(4)) + " ")
            lines.append("")
        (folder / name).write_text("\n".join(lines), encoding="utf8")


def _run(cwd, extra_env=None, launch=None, lr=10.0):
    cmd = [sys.executable, str(EXAMPLE / "train.py"), *ARGS, "--lr", str(lr)]
    if launch is not None:
        n, s = launch
        cmd = [sys.executable, "-m", "mxrs.launcher", "local", "-n", str(n), "-s", str(s), *cmd]
    env = dict(os.environ, PYTHONPATH=f"{SHIM}{os.pathsep}{EXAMPLE}", **(extra_env or {}))
    for var in (
        "DMLC_ROLE",
        "DMLC_PS_ROOT_URI",
        "DMLC_PS_ROOT_PORT",
        "MXRS_KVSTORE",
        "MXRS_OVERLAP",
    ):
        if var not in (extra_env or {}):
            env.pop(var, None)
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    return out


def _valid_ppl(out):
    return [
        float(v)
        for v in re.findall(
            r"\[Epoch \d+\] time cost [\d.]+s, valid loss [\d.]+, valid ppl ([\d.]+)", out
        )
    ]


def test_word_language_model_trains_and_its_perplexity_falls(tmp_path):
    write_corpus(tmp_path / "data")
    out = _run(tmp_path)
    ppl = _valid_ppl(out)
    assert len(ppl) == 4, out[-3000:]
    # 36 words: a uniform guess is perplexity ~36; the grammar allows far less
    assert ppl[-1] < ppl[0] and ppl[-1] < 12, ppl
    best = re.search(r"Best test loss [\d.]+, test ppl ([\d.]+)", out)
    assert best is not None and float(best.group(1)) < 12
    assert (tmp_path / "model.params").is_file()


def test_word_language_model_on_dist_sync_two_workers_two_servers(tmp_path):
    write_corpus(tmp_path / "data")
    # the script clips gradients between backward and step: overlap (which sends them during
    # backward) is off, as mxrs's error would say otherwise
    env = {"MXRS_KVSTORE": "dist_sync", "MXRS_OVERLAP": "0"}
    # the servers sum the two workers' gradients (each scaled by its own batch, as in MXNet):
    # half the learning rate takes the single process's steps
    out = _run(tmp_path, env, launch=(2, 2), lr=5.0)
    ppl = _valid_ppl(out)
    assert len(ppl) == 8, out[-3000:]  # four epochs on each of two workers
    first, last = ppl[:2], ppl[-2:]
    assert max(last) < min(first) and max(last) < 12, ppl
    # one model: both workers hold the same weights, so they see the same validation loss
    assert abs(last[0] - last[1]) < 1e-6 * last[0] + 0.01, ppl
