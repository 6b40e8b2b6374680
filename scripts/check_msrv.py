"""Checks that the workspace's ``rust-version`` (in Cargo.toml) is a true minimum.

It must be at least the release that stabilised the newest language feature the code uses, and
at least every dependency's own ``rust-version`` (read from ``cargo metadata``, every target's
dependencies and dev-dependencies included). Std APIs newer than it are clippy's
``incompatible_msrv`` lint, which reads the same field; test.sh runs both.

Usage: ``python scripts/check_msrv.py`` from anywhere in the checkout; exits 1 with the reasons
when the declared minimum is too low.
"""

import json
import subprocess
import sys
from pathlib import Path

# ``if let ... && ...`` (let chains) in edition 2024: stable since Rust 1.88.
LANGUAGE_FLOOR = ("1.88", "let chains (`if let ... && ...`)")


def _version(text):
    """``"1.85"`` or ``"1.85.0"`` as a comparable tuple (major, minor, patch)."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def _show(version):
    return ".".join(str(p) for p in version[:2]) + (f".{version[2]}" if version[2] else "")


def problems(metadata):
    """The reasons the workspace's declared ``rust-version`` is too low (none when it holds)."""
    members = set(metadata["workspace_members"])
    declared = {
        p["name"]: p.get("rust_version") for p in metadata["packages"] if p["id"] in members
    }
    out = [f"{name} declares no rust-version" for name, v in sorted(declared.items()) if not v]
    if out:
        return out
    if len(set(declared.values())) != 1:
        return [f"the workspace members declare different rust-versions: {declared}"]
    msrv = _version(next(iter(declared.values())))
    floor, feature = _version(LANGUAGE_FLOOR[0]), LANGUAGE_FLOOR[1]
    if msrv < floor:
        out.append(
            f"rust-version {_show(msrv)} is below {_show(floor)}, which the code needs for "
            f"{feature}"
        )
    for p in sorted(metadata["packages"], key=lambda p: p["name"]):
        need = p.get("rust_version")
        if p["id"] not in members and need and _version(need) > msrv:
            out.append(
                f"rust-version {_show(msrv)} is below {p['name']} {p['version']}'s "
                f"rust-version {need}"
            )
    return out


def main():
    root = Path(__file__).resolve().parent.parent
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1"],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    found = problems(metadata)
    for line in found:
        print(f"check_msrv: {line}", file=sys.stderr)
    if found:
        print("check_msrv: raise rust-version in Cargo.toml's [workspace.package]", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
