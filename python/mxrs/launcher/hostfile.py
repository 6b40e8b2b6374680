"""Hostfiles: one host per line as ``host``, ``host:port`` or ``host slots=N`` (``#`` comments)."""

import re
from dataclasses import dataclass

from .job import LaunchError

_LINE = re.compile(
    r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9_.-]+))"
    r"(?::(?P<port>\d+))?(?:\s+slots=(?P<slots>\d+))?$"
)


@dataclass(frozen=True)
class Host:
    """A machine of the job: its name or address, ssh port (None: the default) and MPI slots."""

    name: str
    port: int | None = None
    slots: int = 1

    def __str__(self):
        host = f"[{self.name}]" if ":" in self.name else self.name
        return host if self.port is None else f"{host}:{self.port}"


def parse_hostfile(text, source="hostfile"):
    """Parse hostfile ``text``; a bad line raises :class:`LaunchError` naming it."""
    hosts = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            raise LaunchError(
                f"{source}:{lineno}: cannot read {raw.strip()!r}; expected 'host', "
                "'host:port' or 'host slots=N'"
            )
        port = int(m["port"]) if m["port"] else None
        if port is not None and not 0 < port < 65536:
            raise LaunchError(f"{source}:{lineno}: port {port} is out of range")
        slots = int(m["slots"]) if m["slots"] else 1
        if slots < 1:
            raise LaunchError(f"{source}:{lineno}: slots must be at least 1")
        hosts.append(Host(m["v6"] or m["name"], port, slots))
    if not hosts:
        raise LaunchError(f"{source}: no hosts in it")
    return hosts


def read_hostfile(path):
    """Read and parse the hostfile at ``path``."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise LaunchError(f"cannot read hostfile {path}: {e.strerror}") from None
    return parse_hostfile(text, path)
