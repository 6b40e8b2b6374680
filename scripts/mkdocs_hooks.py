"""MkDocs hooks for the documentation site (mkdocs.yml): the benchmark results and their charts
come from ``bench/``, where the benchmarks write them, instead of copies in ``docs/``."""

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
CHARTS = [
    "bench/scaling.png",
    "bench/kvstore_ratios.png",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "bench" / "cluster").glob("*.png")),
]


def on_files(files, config):
    """Add the charts as ``img/NAME.png`` and ``bench/RESULTS.md`` as the page ``results.md``."""
    for chart in CHARTS:
        name = Path(chart).name
        files.append(File.generated(config, f"img/{name}", abs_src_path=str(ROOT / chart)))
    text = (ROOT / "bench" / "RESULTS.md").read_text()
    text = re.sub(r"\]\((?:cluster/)?([\w.-]+\.png)\)", r"](img/\1)", text)
    files.append(File.generated(config, "results.md", content=text))
    return files
