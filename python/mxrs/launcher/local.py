"""The ``local`` launcher: scheduler, servers and workers as processes of this machine."""

import os

from . import clashes, tracker
from .job import Job, compute_threads


def launches(job: Job):
    """Every server and worker as a local process on 127.0.0.1 (once the job's port is known)."""
    threads = compute_threads(os.cpu_count() or 1, job.num_workers)
    out = []
    for node in job.nodes()[1:]:
        env = {**threads, **clashes.inherited(), **node.env, "DMLC_NODE_HOST": "127.0.0.1"}
        out.append(tracker.node_launch(job, node, job.node_command(node), env))
    return out


def submit(job: Job, dry_run=False):
    """Run ``job`` on this machine over 127.0.0.1; returns the job's exit status. A fixed port
    of the job that is already in use is an error before anything starts."""
    job.root_host = "127.0.0.1"
    job.hosts = ["127.0.0.1"]
    if not dry_run:
        clashes.check_free_ports(job, job.root_host)
        if job.tls is not None:
            job.tls.write()  # files only this user reads; the nodes get their paths
    try:
        return tracker.run(job, launches, dry_run)
    finally:
        if job.tls is not None:
            job.tls.remove()
