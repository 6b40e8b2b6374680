"""Emulated hosts: one Linux network namespace per host on a bridge, each host's link shaped.

A cluster named by a run's ``prefix`` is the namespace ``PREFIX-sw`` holding the bridge
``PREFIXbr`` and one port ``PREFIXp<i>`` per host, and the namespaces ``PREFIX-h<i>``, each
holding the other end of its veth pair, ``PREFIXh<i>``, with the address ``10.213.0.<i+1>``.
Each host's link is shaped in both directions: the egress of ``PREFIXh<i>`` (what the host sends)
and of ``PREFIXp<i>`` (what it receives) each pass a token bucket at the link's rate, and, where
the kernel has ``netem``, a fixed delay. The bridge lives in its own namespace, so nothing of a
run is created in the root namespace and nothing of another run is ever touched: every name
carries the run's prefix, and tear-down finds what to remove by that prefix alone.

Tear-down (:func:`teardown`, also run by :class:`Cluster` on exit) ends every process inside the
run's namespaces (``ip netns pids``: only this run's processes can be there), then deletes the
namespaces, which deletes their links. It is idempotent and can be run from another process
(``python _hosts.py teardown PREFIX``, as ``run.sh``'s trap does).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

SUBNET = "10.213.0"
#: Jumbo frames, as the 25 Gbit/s hosts of the seeds' cluster use (9001 there).
MTU = 9000
_PREFIX = re.compile(r"^[a-z][a-z0-9]{2,9}$")
_CMD_TIMEOUT_S = 20.0
_TERM_WAIT_S = 5.0
MAX_HOSTS = 64


class ClusterError(RuntimeError):
    """A namespace, link or qdisc could not be made or removed; says which and why."""


def _run(argv: list[str], ns: str | None = None, check: bool = True) -> str:
    """Run an ``ip``/``tc`` command (inside namespace ``ns``); returns its stdout."""
    cmd = ["ip", "netns", "exec", ns, *argv] if ns else argv
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=_CMD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"`{' '.join(cmd)}` ran past {_CMD_TIMEOUT_S:g} s") from None
    if check and out.returncode != 0:
        raise ClusterError(f"`{' '.join(cmd)}` failed: {out.stderr.strip()}")
    return out.stdout


def check_prefix(prefix: str) -> str:
    """``prefix`` if it can name a run (3 to 10 lower-case letters and digits, a letter
    first, so that every link name fits Linux's 15 characters)."""
    if not _PREFIX.match(prefix):
        raise ClusterError(
            f"run prefix {prefix!r}: use 3 to 10 lower-case letters and digits, a letter first"
        )
    return prefix


def namespaces(prefix: str) -> list[str]:
    """This run's namespaces that exist now."""
    pat = re.compile(rf"^{re.escape(check_prefix(prefix))}-(sw|h\d+)$")
    names = (line.split()[0] for line in _run(["ip", "netns", "list"]).splitlines() if line)
    return sorted(n for n in names if pat.match(n))


def processes(prefix: str) -> dict[str, list[int]]:
    """{namespace: pids of the processes inside it} for this run's namespaces."""
    found = {}
    for ns in namespaces(prefix):
        pids = [int(p) for p in _run(["ip", "netns", "pids", ns], check=False).split()]
        if pids:
            found[ns] = pids
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def teardown(prefix: str) -> list[str]:
    """End every process in the run's namespaces (TERM, then KILL after a few seconds), delete
    the namespaces and with them their links. Returns what could not be removed (empty when
    all is gone)."""
    pids = [p for ps in processes(prefix).values() for p in ps]
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + _TERM_WAIT_S
    while pids and time.monotonic() < deadline:
        time.sleep(0.05)
        pids = [p for ps in processes(prefix).values() for p in ps]
    _signal_all(pids, signal.SIGKILL)
    left = []
    for ns in namespaces(prefix):
        deadline = time.monotonic() + _TERM_WAIT_S
        while (still := processes(prefix).get(ns)) and time.monotonic() < deadline:
            time.sleep(0.05)  # killed processes leave the namespace when they are reaped
        if still:
            left.append(f"processes {still} in namespace {ns}")
        try:
            _run(["ip", "netns", "del", ns])
        except ClusterError as e:
            left.append(str(e))
    left += [f"namespace {ns}" for ns in namespaces(prefix)]
    return left


@dataclass(frozen=True)
class Link:
    """A host's link: ``rate_mbit`` (Mbit/s, each direction) and one-way ``delay_ms`` added in
    each direction (so a host-to-host trip crosses two delays)."""

    rate_mbit: float
    delay_ms: float = 0.0

    def __post_init__(self) -> None:
        if not self.rate_mbit > 0:
            raise ClusterError(f"link rate must be positive, got {self.rate_mbit} Mbit/s")
        if not self.delay_ms >= 0:
            raise ClusterError(f"link delay must be zero or more, got {self.delay_ms} ms")

    def burst_bytes(self) -> int:
        """The token bucket's depth: 1 ms at the rate, and at least a few jumbo frames."""
        return max(8 * MTU, int(self.rate_mbit * 1e6 / 8 * 1e-3))

    def qdisc_argv(self, dev: str) -> list[list[str]]:
        """The ``tc`` commands that shape ``dev``'s egress."""
        tbf = [
            "tbf",
            "rate",
            f"{self.rate_mbit:g}mbit",
            "burst",
            str(self.burst_bytes()),
            "latency",
            "20ms",
        ]
        if self.delay_ms == 0:
            return [["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", *tbf]]
        netem = ["netem", "delay", f"{self.delay_ms:g}ms", "limit", "100000"]
        return [
            ["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", *netem],
            ["tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf],
        ]


class Cluster:
    """``hosts`` emulated hosts named by ``prefix``, each on a link shaped as ``link`` (None:
    not shaped, as fast as this machine moves data between namespaces).

    Use as a context manager: entering makes the namespaces, links and qdiscs (and removes them
    again if any step fails); leaving tears everything down, processes included, and raises
    :class:`ClusterError` if something is left.
    """

    def __init__(self, prefix: str, hosts: int, link: Link | None) -> None:
        if not 1 <= hosts <= MAX_HOSTS:
            raise ClusterError(f"hosts must be 1 to {MAX_HOSTS}, got {hosts}")
        self.prefix = check_prefix(prefix)
        self.hosts = hosts
        self.link = link
        self.switch = f"{prefix}-sw"

    def ns(self, i: int) -> str:
        """Host ``i``'s namespace."""
        return f"{self.prefix}-h{i}"

    def dev(self, i: int) -> str:
        """Host ``i``'s end of its link (inside :meth:`ns`)."""
        return f"{self.prefix}h{i}"

    def port(self, i: int) -> str:
        """The bridge's end of host ``i``'s link (inside the switch namespace)."""
        return f"{self.prefix}p{i}"

    def addr(self, i: int) -> str:
        """Host ``i``'s address."""
        return f"{SUBNET}.{i + 1}"

    def exec_argv(self, i: int, argv: list[str]) -> list[str]:
        """``argv`` run inside host ``i``."""
        return ["ip", "netns", "exec", self.ns(i), *argv]

    def up(self) -> None:
        """Make the namespaces, the bridge, the links and their qdiscs."""
        if namespaces(self.prefix):
            raise ClusterError(f"namespaces of run {self.prefix!r} exist already")
        sw, br = self.switch, f"{self.prefix}br"
        _run(["ip", "netns", "add", sw])
        _run(["ip", "link", "set", "lo", "up"], sw)
        _run(["ip", "link", "add", br, "mtu", str(MTU), "type", "bridge"], sw)
        _run(["ip", "link", "set", br, "up"], sw)
        for i in range(self.hosts):
            ns, dev, port = self.ns(i), self.dev(i), self.port(i)
            _run(["ip", "netns", "add", ns])
            _run(["ip", "link", "set", "lo", "up"], ns)
            _run(
                ["ip", "link", "add", port, "mtu", str(MTU), "type", "veth", "peer", "name", dev]
                + ["mtu", str(MTU), "netns", ns],
                sw,
            )
            _run(["ip", "link", "set", port, "master", br, "up"], sw)
            _run(["ip", "addr", "add", f"{self.addr(i)}/24", "dev", dev], ns)
            _run(["ip", "link", "set", dev, "up"], ns)
            if self.link is not None:
                self._shape(self.link, dev, ns)
                self._shape(self.link, port, sw)

    @staticmethod
    def _shape(link: Link, dev: str, ns: str) -> None:
        for argv in link.qdisc_argv(dev):
            try:
                _run(argv, ns)
            except ClusterError as e:
                if "netem" in argv and "unknown" in str(e).lower():
                    raise ClusterError(
                        "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), so a link "
                        "delay cannot be emulated: run with a delay of 0"
                    ) from None
                raise

    def qdiscs(self, i: int) -> dict[str, str]:
        """``tc qdisc show`` of host ``i``'s two link ends: {"send": ..., "receive": ...}."""
        return {
            "send": _run(["tc", "qdisc", "show", "dev", self.dev(i)], self.ns(i)).strip(),
            "receive": _run(["tc", "qdisc", "show", "dev", self.port(i)], self.switch).strip(),
        }

    def describe(self) -> dict:
        """What was built, as the kernel reports it: per host its namespace, address and the
        two qdiscs."""
        return {
            "prefix": self.prefix,
            "rate_mbit": self.link.rate_mbit if self.link else None,
            "delay_ms": self.link.delay_ms if self.link else 0.0,
            "mtu": MTU,
            "hosts": [
                {"ns": self.ns(i), "addr": self.addr(i), **self.qdiscs(i)}
                for i in range(self.hosts)
            ],
        }

    def down(self) -> None:
        """Tear everything down; raises :class:`ClusterError` naming what is left."""
        left = teardown(self.prefix)
        if left:
            raise ClusterError(f"run {self.prefix!r} left: " + "; ".join(left))

    def __enter__(self) -> Cluster:
        try:
            self.up()
        except BaseException:
            teardown(self.prefix)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()


def main(argv: list[str]) -> int:
    """``python _hosts.py teardown PREFIX``: remove what a run left (run.sh's trap)."""
    if len(argv) != 2 or argv[0] != "teardown":
        print("usage: python _hosts.py teardown PREFIX", file=sys.stderr)
        return 2
    left = teardown(argv[1])
    for what in left:
        print(f"_hosts.py: could not remove {what}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
