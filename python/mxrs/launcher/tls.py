"""``mxrs-launch --tls``: a certificate authority made for one job, and its nodes' certificates.

The launcher makes a CA for the job and a certificate for each node, then forgets the CA's key:
nothing can sign another certificate of the job. Every node gets ``MXRS_TLS_CERT``,
``MXRS_TLS_KEY`` and ``MXRS_TLS_CA``; with them every link of the job, control plane and data
plane, is mutual TLS, and the job's secret handshake runs inside it. Launchers that start each
node on its own (``local``, ``ssh``, ``kubernetes``) give each node a certificate of its own
(``worker 1``); those that start a role's processes together (``mpi``, ``sge``, ``yarn``,
``slurm``) one per role (``workers``). The values are files where the launcher can write them
where the nodes run (``local``: a directory only this user can read, removed with the job;
``kubernetes``: the job's Secret), else the PEM text itself with its line breaks written
``\\n``, passed the way the job's secret is (ssh's stdin, mpirun's environment, the batch script
only this user can read).
"""

import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field

#: Launchers that start each node on its own, which gets a certificate of its own.
PER_NODE = ("local", "ssh", "kubernetes")
#: How long a job's certificates are valid unless ``--tls-days`` says otherwise.
DEFAULT_DAYS = 7.0
#: What dry runs show instead of a private key.
KEY_MASK = "<tls key>"


@dataclass
class JobTls:
    """A job's TLS material in PEM: the CA's certificate, and a certificate and key for each
    node (``worker 1``) or role (``workers``) the launcher names."""

    ca: str
    certs: dict  # label -> (cert_pem, key_pem)
    #: Where the files were written (:meth:`write`), or None: values go inline.
    directory: str | None = None
    _owned: bool = field(default=False, repr=False)

    def files(self):
        """dict: file name -> bytes, for a directory or a Kubernetes Secret."""
        out = {"ca.pem": self.ca.encode()}
        for label, (cert, key) in self.certs.items():
            out[f"{file_stem(label)}.pem"] = cert.encode()
            out[f"{file_stem(label)}-key.pem"] = key.encode()
        return out

    def env(self, label):
        """``MXRS_TLS_*`` for the node (or role) ``label``: paths of the files :meth:`write`
        put, else the PEM texts on one line each."""
        cert, key = self.certs[label]
        if self.directory is not None:
            return paths(self.directory, file_stem(label))
        return {
            "MXRS_TLS_CERT": _one_line(cert),
            "MXRS_TLS_KEY": _one_line(key),
            "MXRS_TLS_CA": _one_line(self.ca),
        }

    def write(self, directory=None):
        """Writes :meth:`files` into ``directory`` (default: a new private temporary one, which
        :meth:`remove` deletes), readable by this user only; later :meth:`env` calls name them."""
        if directory is None:
            directory = tempfile.mkdtemp(prefix="mxrs-tls-")
            self._owned = True
        os.makedirs(directory, mode=0o700, exist_ok=True)
        for name, data in self.files().items():
            path = os.path.join(directory, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        self.directory = directory
        return directory

    def remove(self):
        """Deletes the directory :meth:`write` made (not one the caller gave)."""
        if self._owned and self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
            self._owned = False

    def secrets(self):
        """The key texts, as they may appear in a node's environment (for dry runs to mask)."""
        return [k for _, k in self.certs.values()] + [_one_line(k) for _, k in self.certs.values()]


def file_stem(label):
    """The files' name for ``label``: ``worker 1`` -> ``worker-1``."""
    return label.replace(" ", "-")


def paths(directory, stem):
    """``MXRS_TLS_*`` naming the files of ``stem`` (and the CA's) in ``directory``."""
    return {
        "MXRS_TLS_CERT": f"{directory}/{stem}.pem",
        "MXRS_TLS_KEY": f"{directory}/{stem}-key.pem",
        "MXRS_TLS_CA": f"{directory}/ca.pem",
    }


def labels(launcher, servers, workers):
    """The certificates a job needs under ``launcher``: the scheduler's, then each node's
    (:data:`PER_NODE` launchers) or each role's."""
    if launcher in PER_NODE:
        nodes = [f"server {i}" for i in range(servers)] + [f"worker {i}" for i in range(workers)]
        return ["scheduler", *nodes]
    return ["scheduler", "servers", "workers"]


def _one_line(pem):
    return pem.strip().replace("\n", "\\n")


def make(names, days=DEFAULT_DAYS, hosts=()):
    """A new :class:`JobTls` with a certificate for each of ``names`` (:func:`labels`), valid
    for ``days`` from now (and five minutes before, for clocks that differ), also naming
    ``hosts``. The CA is named by a fresh random id, nothing of the job's secret."""
    from .. import _native

    names = list(names)
    job_id = secrets.token_hex(6)
    ca, pairs = _native.tls_job_certificates(job_id, names, days * 86400.0, list(hosts))
    return JobTls(ca, dict(zip(names, pairs, strict=True)))
