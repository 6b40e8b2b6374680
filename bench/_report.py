"""What the side-by-side benchmarks write into ``bench/RESULTS.md``: the machine line, each
library's version, and the marked sections they replace."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path

from _jobs import python_for


def machine(load: bool = False) -> str:
    """One line describing this machine: CPUs, kernel, Python (and the load average now)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = f" ({line.split(':', 1)[1].strip()})"
                break
    except OSError:
        pass
    text = (
        f"{os.cpu_count()} CPUs{model}, {platform.machine()}, Linux {platform.release()}, "
        f"Python {platform.python_version()}"
    )
    return text + (f", load average {os.getloadavg()[0]:.2f} at start" if load else "")


def version(lib: str) -> str:
    """``lib.__version__`` as its own interpreter reports it."""
    out = subprocess.run(
        [python_for(lib), "-c", f"import {lib}; print({lib}.__version__)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.stdout.strip() or "?"


def write_section(path: Path, text: str, begin: str, end: str) -> None:
    """Replace the part of ``path`` from ``begin`` to ``end`` with ``text`` (which carries both
    markers), or append ``text`` when the markers are absent."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + text + rest.split(end, 1)[1]
    else:
        new = old.rstrip() + "\n\n" + text + "\n"
    path.write_text(new)


def publish(
    data: dict, text: str, json_path: Path, results: Path, write: bool, begin: str, end: str
) -> None:
    """Save ``data`` as JSON, print the section ``text`` and, with ``write``, put it into
    ``results`` between ``begin`` and ``end``."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(data, indent=1))
    print(text)
    if write:
        write_section(results, text, begin, end)
