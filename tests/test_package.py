"""The installed package: its version, its Rust extension and its console scripts."""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import mxrs
import pytest
from mxrs import _native

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CARGO = tomllib.loads((ROOT / "Cargo.toml").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SCRIPTS = sorted(PYPROJECT["project"]["scripts"])


def test_the_versions_are_the_workspaces():
    # The extension, the package and its installed metadata are all built from this checkout.
    version = CARGO["workspace"]["package"]["version"]
    assert _native.__version__ == version
    assert mxrs.__version__ == version
    assert importlib.metadata.version("mxrs") == version


def test_the_console_scripts_are_those_pyproject_declares():
    installed = {
        e.name: e.value
        for e in importlib.metadata.entry_points(group="console_scripts")
        if e.dist is not None and e.dist.name == "mxrs"
    }
    assert installed == PYPROJECT["project"]["scripts"]
    assert {"ps-scheduler", "ps-server", "mxrs-launch"} <= set(installed)


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_console_script_runs(name):
    script = Path(sys.executable).parent / name
    assert os.access(script, os.X_OK), f"{script} is not installed"
    r = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert name in r.stdout
    # each one shows its own flags: the node settings, the launcher's modes, im2rec's packing
    expected = {
        "mxrs-launch": "{local,ssh,mpi,sge,yarn,slurm,kubernetes}",
        "im2rec": "--pack-label",
    }
    assert expected.get(name, "--num-workers") in r.stdout, r.stdout


def test_the_license_file_is_the_license_the_manifests_declare():
    # pyproject.toml and Cargo.toml both say Apache-2.0; LICENSE is that license's text, and
    # the installed package's metadata names it too.
    assert PYPROJECT["project"]["license"] == {"text": "Apache-2.0"}
    assert CARGO["workspace"]["package"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0")
    assert "END OF TERMS AND CONDITIONS" in text
    assert importlib.metadata.metadata("mxrs")["License"] == "Apache-2.0"


def test_no_file_names_a_folder_of_the_development_machine():
    """Tests, scripts, benchmarks and the package reach outside the repository only through
    ``../shared`` relative to it, so a clone behaves the same on every machine."""
    named = []
    for folder in ("python", "tests", "scripts", "bench", "examples", ".ci"):
        for path in (ROOT / folder).rglob("*"):
            inner = path.relative_to(ROOT / folder).parts  # virtualenvs and caches are not ours
            if any(p.startswith((".", "__pycache__")) for p in inner):
                continue
            if path.suffix in (".py", ".sh", "") and path.is_file():
                text = path.read_text(errors="replace")
                if "/work/" + "shared" in text or "/work/" + "main" in text:
                    named.append(str(path.relative_to(ROOT)))
    assert named == []
