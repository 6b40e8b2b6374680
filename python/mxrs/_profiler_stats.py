"""The aggregate statistics of ``mx.profiler.dumps``: MXNet's table layout, or JSON."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["SORT_KEYS", "format_stats"]

#: how ``dumps(sort_by=...)`` orders spans; a span's stats are [count, total, min, max] (ms)
SORT_KEYS = {
    "total": lambda s: s[1],
    "avg": lambda s: s[1] / s[0],
    "min": lambda s: s[2],
    "max": lambda s: s[3],
    "count": lambda s: s[0],
}
_RULE = "================="
_TIME_HEAD = ("Name", "Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)")
_COUNTER_HEAD = ("Name", "Total Count", "Last Value", "Min Value", "Max Value")


def format_stats(
    spans: dict[tuple[str, str], list[float]],
    counters: dict[tuple[str, str], list[int]],
    format: str,
    sort_by: str,
    ascending: bool,
) -> str:
    """Spans ``(category, name) -> [count, total, min, max]`` and counters ``-> [count, last,
    min, max]`` as ``dumps`` prints them (``format`` 'table' or 'json')."""
    key = SORT_KEYS[sort_by]
    times: dict[str, dict[str, dict[str, float]]] = {}
    for (cat, name), s in sorted(spans.items(), key=lambda kv: key(kv[1]), reverse=not ascending):
        stat = {"Count": s[0], "Total": s[1], "Min": s[2], "Max": s[3], "Avg": s[1] / s[0]}
        times.setdefault(cat, {})[name] = stat
    values: dict[str, dict[str, dict[str, float]]] = {}
    for (cat, name), c in sorted(counters.items()):
        values.setdefault(cat, {})[name] = {"Count": c[0], "Last": c[1], "Min": c[2], "Max": c[3]}
    if format == "json":
        out = {
            "Time": times,
            "Counter": values,
            "Memory": {},
            "Unit": {"Time": "ms", "Memory": "kB"},
        }
        return json.dumps(out, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for title, table, head in (
        ("{}", times, _TIME_HEAD),
        ("{} (counters)", values, _COUNTER_HEAD),
    ):
        for cat, rows in table.items():
            lines += [title.format(cat), _RULE, _row(head), _row(tuple("-" * len(h) for h in head))]
            for n, stat in rows.items():
                cells = [f"{v:.4f}" if isinstance(v, float) else v for v in stat.values()]
                lines.append(_row((n, *cells)))
            lines.append("")
    return "\n".join(lines) + "\n"


def _row(cells: tuple[Any, ...]) -> str:
    """One line of the :func:`dumps` table: the name in 30 columns, then right-aligned cells."""
    widths = (11,) + (17,) * (len(cells) - 2)
    return f"{cells[0]!s:<30}" + "".join(
        f"{c!s:>{w}}" for c, w in zip(cells[1:], widths, strict=True)
    )
