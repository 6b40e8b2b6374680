"""ps-core's modules depend one way: placement (partitioning, chains, topology) below the
scheduler, the servers and the workers, and those three never name each other; inside the
server, the handlers, the offload and the connection do not import each other in a circle.
Read from the Rust sources' ``use`` lines and paths (tests excepted)."""

import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parent.parent / "crates" / "ps-core" / "src"


def _mentions(module):
    """{file: set of crate modules its code names} for the files of ``module``."""
    out = {}
    paths = [SRC / f"{module}.rs", *sorted((SRC / module).rglob("*.rs"))]
    for path in paths:
        if not path.exists() or path.name.endswith("tests.rs"):
            continue
        code = "\n".join(
            ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//")
        )
        code = code.split("#[cfg(test)]", 1)[0]
        out[path.relative_to(SRC)] = set(re.findall(r"crate::(\w+)", code))
    return out


def test_placement_is_below_the_scheduler_the_servers_and_the_workers():
    for path, names in _mentions("placement").items():
        assert not names & {"scheduler", "server", "worker", "node"}, (path, names)


def test_scheduler_servers_and_workers_do_not_name_each_other():
    roles = {"scheduler", "server", "worker"}
    for role in roles:
        for path, names in _mentions(role).items():
            assert not names & (roles - {role}), (path, sorted(names & (roles - {role})))


def test_the_server_handlers_do_not_import_the_connection_or_the_offload():
    handlers = [SRC / "server" / "handlers.rs", *(SRC / "server" / "handlers").rglob("*.rs")]
    for path in handlers:
        text = path.read_text()
        assert not re.search(r"\b(connection|offload)::", text), path
    assert "super::handlers" not in (SRC / "server" / "connection.rs").read_text()
