"""The Kubernetes objects a job becomes under ``mxrs-launch kubernetes``, and their YAML.

A job of W workers and S servers is a Secret (the job secret, and any extra files every pod
mounts read-only at :data:`SECRET_MOUNT`), a headless Service and three Indexed Jobs: the
scheduler (one pod), the servers and the workers, whose completion index is each pod's rank.
With ``--jobset`` the three Jobs are the replicated Jobs of one JobSet (``jobset.x-k8s.io``),
which makes the headless Service itself. Every pod has a stable DNS name; servers and workers
reach the scheduler at :func:`scheduler_host`, a fixed port (default :data:`DEFAULT_PORT`).

Each pod binds and advertises its own address (``DMLC_NODE_HOST`` from ``status.podIP``), reads
``MXRS_SECRET`` from the Secret (never a plain value in a manifest) and its rank from the Job's
completion index. Every object carries the label :data:`LABEL_JOB` naming the job, pods also
:data:`LABEL_ROLE`, so that the job's objects can be selected (and deleted) together.

Nothing here talks to a cluster or needs the ``kubernetes`` package: :func:`to_yaml` writes
the manifests itself (``--dry-run``).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from .job import Job, LaunchError, compute_threads
from .tls import paths as tls_paths

#: The scheduler's port when ``--env DMLC_PS_ROOT_PORT=P`` does not give one.
DEFAULT_PORT = 9091
#: Where every pod finds the Secret's extra files (read-only).
SECRET_MOUNT = "/etc/mxrs/secret"
#: The Secret's key holding the job secret.
SECRET_KEY = "MXRS_SECRET"
#: The name of the container that runs a node in each pod.
CONTAINER = "mxrs"
#: Label naming the job on every object, and the role on every pod.
LABEL_JOB = "mxrs/job"
LABEL_ROLE = "mxrs/role"
#: The annotation (and label) the Job controller puts the pod's completion index in.
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
JOBSET_GROUP, JOBSET_VERSION, JOBSET_PLURAL = "jobset.x-k8s.io", "v1alpha2", "jobsets"
ROLES = ("scheduler", "server", "worker")

_MANAGED = {"app.kubernetes.io/managed-by": "mxrs-launch"}
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_CPU = re.compile(r"^([0-9]+(\.[0-9]+)?|[0-9]+m)$")
_MEMORY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_FILE_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: The longest ``--name``: the scheduler's host name (``NAME-scheduler-0-0`` with a JobSet)
#: must stay a DNS label (63 characters).
_MAX_NAME = 40
#: How long a server or worker waits for the scheduler's DNS name before it starts, seconds.
_DNS_WAIT_S = 300
#: Waits until ``argv[1]`` resolves (the scheduler's pod has an address), at most ``argv[2]`` s.
_WAIT_FOR_NAME = (
    "import socket, sys, time\n"
    "host, end = sys.argv[1], time.monotonic() + float(sys.argv[2])\n"
    "while True:\n"
    "    try:\n"
    "        socket.getaddrinfo(host, None)\n"
    "        break\n"
    "    except OSError as e:\n"
    "        if time.monotonic() > end:\n"
    "            sys.exit(f'{host}: no address after {sys.argv[2]} s ({e})')\n"
    "        time.sleep(1)\n"
)

#: ``--flag``: the argparse destination of each option only the kubernetes launcher takes.
FLAGS = {
    "--image": "image",
    "--namespace": "namespace",
    "--name": "name",
    "--cpu": "cpu",
    "--memory": "memory",
    "--gpus": "gpus",
    "--node-selector": "node_selector",
    "--toleration": "toleration",
    "--service-account": "service_account",
    "--jobset": "jobset",
    "--keep": "keep",
}


def _new_name() -> str:
    return f"mxrs-{secrets.token_hex(3)}"


@dataclass
class KubeSettings:
    """How a job runs on Kubernetes: the image, where, with what resources, and the extras.

    ``files`` are extra files of the job's Secret (name -> bytes), mounted read-only in every
    pod at :data:`SECRET_MOUNT` (``SECRET_MOUNT/name``).
    """

    image: str
    name: str = field(default_factory=_new_name)
    namespace: str | None = None
    cpu: str | None = None
    memory: str | None = None
    gpus: int = 0
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, str]] = field(default_factory=list)
    service_account: str | None = None
    jobset: bool = False
    keep: bool = False
    files: dict[str, bytes] = field(default_factory=dict)


def given_flag(args: Any) -> str | None:
    """The first kubernetes-only option set in ``args`` (an argparse namespace), or None."""
    for flag, dest in FLAGS.items():
        if getattr(args, dest, None) not in (None, False, [], 0):
            return flag
    return None


def settings_from(args: Any) -> KubeSettings:
    """:class:`KubeSettings` from the command line's options; a bad value raises
    :class:`~.job.LaunchError` naming its flag."""
    if not args.image or not args.image.strip() or any(c.isspace() for c in args.image):
        raise LaunchError(
            "the kubernetes launcher needs --image IMAGE: the container image that has mxrs "
            "and the program (no spaces)"
        )
    name = args.name or _new_name()
    if not _DNS_LABEL.match(name) or len(name) > _MAX_NAME:
        raise LaunchError(
            f"--name {name!r}: expected lower-case letters, digits and '-', starting with a "
            f"letter and not ending with '-', at most {_MAX_NAME} characters"
        )
    if args.namespace is not None and (
        not _DNS1123_LABEL.match(args.namespace) or len(args.namespace) > 63
    ):
        raise LaunchError(f"--namespace {args.namespace!r}: not a namespace name")
    if args.cpu is not None and (not _CPU.match(args.cpu) or _cpus(args.cpu) <= 0):
        raise LaunchError(f"--cpu {args.cpu!r}: expected cores, such as 4, 2.5 or 500m")
    if args.memory is not None and not _MEMORY.match(args.memory):
        raise LaunchError(f"--memory {args.memory!r}: expected a quantity, such as 8Gi or 512Mi")
    if args.gpus is not None and args.gpus < 0:
        raise LaunchError(f"--gpus must be 0 or more, got {args.gpus}")
    sa = args.service_account
    if sa is not None and (not _SUBDOMAIN.match(sa) or len(sa) > 253):
        raise LaunchError(f"--service-account {sa!r}: not a service account name")
    return KubeSettings(
        image=args.image,
        name=name,
        namespace=args.namespace,
        cpu=args.cpu,
        memory=args.memory,
        gpus=args.gpus or 0,
        node_selector=dict(parse_node_selector(s) for s in args.node_selector or ()),
        tolerations=[parse_toleration(t) for t in args.toleration or ()],
        service_account=sa,
        jobset=bool(args.jobset),
        keep=bool(args.keep),
    )


def _label_key(key: str) -> bool:
    """Whether ``key`` is a label key: ``[prefix/]name``, the prefix a DNS subdomain."""
    prefix, _, name = key.rpartition("/")
    if prefix and (not _SUBDOMAIN.match(prefix) or len(prefix) > 253):
        return False
    return bool(_NAME_PART.match(name)) and len(name) <= 63


def parse_node_selector(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``--node-selector`` -> (key, value)."""
    key, sep, value = text.partition("=")
    if not sep or not _label_key(key) or not _LABEL_VALUE.match(value) or len(value) > 63:
        raise LaunchError(
            f"--node-selector {text!r}: expected KEY=VALUE, a node label, such as "
            "cloud.google.com/gke-nodepool=gpu"
        )
    return key, value


def parse_toleration(text: str) -> dict[str, str]:
    """``KEY[=VALUE][:EFFECT]`` of ``--toleration`` -> a toleration (without VALUE: any value;
    without EFFECT: every effect)."""
    body, colon, effect = text.rpartition(":") if ":" in text else (text, "", "")
    key, eq, value = body.partition("=")
    bad = not _label_key(key) or (colon and effect not in _EFFECTS)
    if bad or (eq and (not _LABEL_VALUE.match(value) or len(value) > 63)):
        raise LaunchError(
            f"--toleration {text!r}: expected KEY[=VALUE][:EFFECT], EFFECT one of "
            f"{', '.join(_EFFECTS)}, such as nvidia.com/gpu:NoSchedule"
        )
    out = {"key": key, "operator": "Equal" if eq else "Exists"}
    if eq:
        out["value"] = value
    if colon:
        out["effect"] = effect
    return out


def _cpus(cpu: str) -> float:
    return int(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)


def scheduler_host(settings: KubeSettings, namespace: str) -> str:
    """The scheduler pod's DNS name: ``NAME-scheduler-0.NAME.NAMESPACE.svc`` (an Indexed Job's
    pod is ``JOB-INDEX`` in the Service its ``subdomain`` names); a JobSet's replicated Job
    ``scheduler`` is the Job ``NAME-scheduler-0``, whose pod is ``NAME-scheduler-0-0`` in the
    JobSet's own Service ``NAME``."""
    pod = f"{settings.name}-scheduler-0" + ("-0" if settings.jobset else "")
    return f"{pod}.{settings.name}.{namespace}.svc"


def labels(settings: KubeSettings, role: str | None = None) -> dict[str, str]:
    """The labels of the job's objects (with ``role``: of its pods of that role)."""
    out = {LABEL_JOB: settings.name, **_MANAGED}
    if role is not None:
        out[LABEL_ROLE] = role
    return out


def selector(settings: KubeSettings) -> str:
    """The label selector of every object of the job."""
    return f"{LABEL_JOB}={settings.name}"


def secret_file_path(name: str) -> str:
    """Where a pod finds the Secret's extra file ``name``."""
    return f"{SECRET_MOUNT}/{name}"


def secret_manifest(
    settings: KubeSettings, namespace: str, secret: str, files: dict[str, bytes] | None = None
) -> dict[str, Any]:
    """The job's Secret: the job secret under :data:`SECRET_KEY`, and ``files`` (default:
    ``settings.files``), each under its name, for :func:`secret_volume` to mount."""
    files = settings.files if files is None else files
    for key in files:
        if not _FILE_KEY.match(key) or key in (".", "..", SECRET_KEY) or len(key) > 253:
            raise LaunchError(
                f"secret file {key!r}: a name of letters, digits, '-', '_' and '.' (not "
                f"{SECRET_KEY})"
            )
    data = {SECRET_KEY: secret.encode(), **files}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(settings, namespace),
        "type": "Opaque",
        "immutable": True,
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def secret_volume(settings: KubeSettings, files: dict[str, bytes] | None = None):
    """(volume, mount) that put the Secret's ``files`` at :data:`SECRET_MOUNT`, read-only and
    readable by the pod's user only; None when there are none."""
    files = settings.files if files is None else files
    if not files:
        return None
    volume = {
        "name": "mxrs-secret",
        "secret": {
            "secretName": settings.name,
            "defaultMode": 0o400,
            "items": [{"key": k, "path": k} for k in sorted(files)],
        },
    }
    return volume, {"name": "mxrs-secret", "mountPath": SECRET_MOUNT, "readOnly": True}


def service_manifest(settings: KubeSettings, namespace: str, port: int) -> dict[str, Any]:
    """The headless Service that gives every pod of the job a DNS name (published before the
    pods are ready, so that nodes find each other while they start)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(settings, namespace),
        "spec": {
            "clusterIP": "None",
            "selector": {LABEL_JOB: settings.name},
            "publishNotReadyAddresses": True,
            "ports": [{"name": "scheduler", "port": port, "targetPort": port}],
        },
    }


def _metadata(settings: KubeSettings, namespace: str, name: str | None = None) -> dict[str, Any]:
    return {
        "name": name or settings.name,
        "namespace": namespace,
        "labels": labels(settings),
    }


def escape(value: str) -> str:
    """``value`` as Kubernetes passes it on literally in ``env`` values and ``command``
    words, which otherwise expand ``$(VAR)`` (``$$`` stands for ``$``)."""
    return value.replace("$", "$$")


def _python(job: Job) -> str:
    """The image's Python for the scheduler and servers: the command's own, else ``python``."""
    first = job.command[0]
    return first if os.path.basename(first).startswith("python") else "python"


def restarts(job: Job, role: str) -> int:
    """How many times a failed pod of ``role`` is replaced: ``--max-restarts`` for workers,
    and for servers whose keys have backups (``--replicas``); the scheduler never."""
    if role == "worker" or (role == "server" and job.replicas > 0):
        return job.max_restarts
    return 0


def role_env(job: Job, settings: KubeSettings, role: str) -> list[dict[str, Any]]:
    """The ``env`` of a pod of ``role``: its address and rank from Kubernetes, the secret from
    the Secret, then the job's variables (values taken literally)."""
    own_ip = {"valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    env: list[dict[str, Any]] = [{"name": "DMLC_NODE_HOST", **own_ip}]
    if role == "scheduler":  # it binds its own address; the others reach it by name
        env.append({"name": "DMLC_PS_ROOT_URI", **own_ip})
    else:
        index = f"metadata.annotations['{INDEX_KEY}']"
        env.append(
            {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": index}}}
        )
        rank = "DMLC_WORKER_ID" if role == "worker" else "DMLC_SERVER_ID"
        env.append({"name": rank, "value": "$(JOB_COMPLETION_INDEX)"})
    env.append(
        {
            "name": SECRET_KEY,
            "valueFrom": {"secretKeyRef": {"name": settings.name, "key": SECRET_KEY}},
        }
    )
    threads = compute_threads(max(1, math.floor(_cpus(settings.cpu))), 1) if settings.cpu else {}
    extra = {"server": job.env_server, "worker": job.env_worker}.get(role, {})
    env += [{"name": k, "value": v} for k, v in _tls_env(job, role).items()]
    plain = {**threads, **job.base_env(), **extra, "DMLC_ROLE": role}
    if role != "worker" and job.metrics_port is not None:  # each pod has an address of its own
        plain["MXRS_METRICS_PORT"] = str(job.metrics_port)
    taken = {e["name"] for e in env}
    env += [{"name": k, "value": escape(str(v))} for k, v in plain.items() if k not in taken]
    return env


def _tls_env(job: Job, role: str) -> dict[str, str]:
    """``MXRS_TLS_*`` of a pod of ``role``, naming its files in the Secret: each server's and
    worker's own by its completion index where the job has one per node."""
    if job.tls is None:
        return {}
    if role == "scheduler":
        return tls_paths(SECRET_MOUNT, "scheduler")
    if f"{role} 0" in job.tls.certs:  # Kubernetes expands $(VAR) of an earlier variable
        return tls_paths(SECRET_MOUNT, f"{role}-$(JOB_COMPLETION_INDEX)")
    return tls_paths(SECRET_MOUNT, f"{role}s")


def _resources(settings: KubeSettings, role: str) -> dict[str, Any]:
    requests, limits = {}, {}
    if settings.cpu:
        requests["cpu"] = settings.cpu
    if settings.memory:
        requests["memory"] = limits["memory"] = settings.memory
    if settings.gpus and role == "worker":
        limits["nvidia.com/gpu"] = str(settings.gpus)
    out = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def pod_spec(job: Job, settings: KubeSettings, role: str) -> dict[str, Any]:
    """The pod template's spec for ``role``."""
    argv = list(job.command) if role == "worker" else [_python(job), "-c", "import mxrs"]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": settings.image,
        "command": [escape(a) for a in argv],
        "env": role_env(job, settings, role),
    }
    ports = []
    if role == "scheduler":
        ports.append({"name": "scheduler", "containerPort": job.root_port})
    if role != "worker" and job.metrics_port:
        ports.append({"name": "metrics", "containerPort": job.metrics_port})
    if ports:
        container["ports"] = ports
    resources = _resources(settings, role)
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {"restartPolicy": "Never", "enableServiceLinks": False}
    if not settings.jobset:  # a JobSet sets the subdomain itself
        spec["subdomain"] = settings.name
    if settings.service_account:
        spec["serviceAccountName"] = settings.service_account
    else:  # nodes never call the Kubernetes API
        spec["automountServiceAccountToken"] = False
    if settings.node_selector:
        spec["nodeSelector"] = dict(settings.node_selector)
    if settings.tolerations:
        spec["tolerations"] = [dict(t) for t in settings.tolerations]
    if role != "scheduler":
        # nodes resolve the scheduler's name once, as they start: wait until it has one
        host = job.root_host
        spec["initContainers"] = [
            {
                "name": "wait-for-scheduler",
                "image": settings.image,
                "command": [_python(job), "-c", _WAIT_FOR_NAME, host, str(_DNS_WAIT_S)],
            }
        ]
    mounted = secret_volume(settings)
    if mounted is not None:
        volume, mount = mounted
        spec["volumes"] = [volume]
        container["volumeMounts"] = [mount]
    spec["containers"] = [container]
    return spec


def job_spec(job: Job, settings: KubeSettings, role: str) -> dict[str, Any]:
    """The Indexed Job spec of ``role``: one pod per rank, each index replaced after a failure
    up to :func:`restarts` times (``backoffLimitPerIndex``); a pod lost to a disruption (node
    drain, preemption) is replaced without counting (``podFailurePolicy``)."""
    count = {"scheduler": 1, "server": job.num_servers, "worker": job.num_workers}[role]
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": count,
        "parallelism": count,
    }
    again = restarts(job, role)
    expendable = role == "server" and job.replicas > 0
    if again or expendable:
        spec["backoffLimitPerIndex"] = again
        # a server whose keys have backups may fail for good without failing its Job (which
        # would stop the other servers): the scheduler says whether the job can go on
        spec["maxFailedIndexes"] = count if expendable else 0
    else:
        spec["backoffLimit"] = 0
    spec["podFailurePolicy"] = {
        "rules": [
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            }
        ]
    }
    meta: dict[str, Any] = {"labels": labels(settings, role)}
    if role != "worker" and job.metrics_port:
        meta["annotations"] = {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(job.metrics_port),
        }
    spec["template"] = {"metadata": meta, "spec": pod_spec(job, settings, role)}
    return spec


def job_manifest(job: Job, settings: KubeSettings, namespace: str, role: str) -> dict[str, Any]:
    """The Indexed Job ``NAME-ROLE``."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(settings, namespace, f"{settings.name}-{role}"),
        "spec": job_spec(job, settings, role),
    }


def jobset_manifest(job: Job, settings: KubeSettings, namespace: str) -> dict[str, Any]:
    """The JobSet ``NAME``: one replicated Job per role, done when every worker is."""
    return {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_VERSION}",
        "kind": "JobSet",
        "metadata": _metadata(settings, namespace),
        "spec": {
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": ["worker"]},
            "failurePolicy": {"maxRestarts": 0},
            "replicatedJobs": [
                {
                    "name": role,
                    "replicas": 1,
                    "template": {
                        "metadata": {"labels": labels(settings, role)},
                        "spec": job_spec(job, settings, role),
                    },
                }
                for role in ROLES
            ],
        },
    }


def build(job: Job, settings: KubeSettings, namespace: str) -> list[dict[str, Any]]:
    """Every object of ``job``, in the order they are created: the Secret, then the Service
    and the scheduler's, servers' and workers' Jobs, or the JobSet. ``job.root_host`` and
    ``job.root_port`` must be the scheduler's name and port."""
    docs = [secret_manifest(settings, namespace, job.secret)]
    if settings.jobset:
        return [*docs, jobset_manifest(job, settings, namespace)]
    docs.append(service_manifest(settings, namespace, job.root_port))
    return docs + [job_manifest(job, settings, namespace, role) for role in ROLES]


def masked(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``docs`` as a dry run shows them: the Secret's values replaced by ``<secret>`` (the job
    secret) and ``<N bytes>`` (its files), as ``stringData``."""
    out = []
    for doc in docs:
        if doc.get("kind") == "Secret":
            doc = dict(doc)
            data = doc.pop("data", {})
            doc["stringData"] = {
                k: "<secret>" if k == SECRET_KEY else f"<{len(base64.b64decode(v))} bytes>"
                for k, v in data.items()
            }
        out.append(doc)
    return out


# --- YAML ---------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """``docs`` (JSON-like: dicts, lists, strings, numbers, booleans, None) as a multi-document
    YAML stream; every string is double-quoted, so none reads as a number or a boolean."""
    return "".join("---\n" + _block(doc, 0) for doc in docs)


def _block(value: dict[str, Any] | list[Any], indent: int) -> str:
    pad = " " * indent
    lines = []
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    for key, item in items:
        head = f"{pad}{_key(key)}:" if isinstance(value, dict) else f"{pad}-"
        if isinstance(item, (dict, list)) and item:
            if isinstance(value, list):  # "- " then the item's first line
                inner = _block(item, indent + 2)
                lines.append(head + " " + inner[indent + 2 :])
            else:
                lines.append(head + "\n" + _block(item, indent + 2))
        else:
            lines.append(f"{head} {_scalar(item)}\n")
    return "".join(lines)


def _key(key: Any) -> str:
    text = str(key)
    if _PLAIN_KEY.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return _quote(text)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _quote(str(value))


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _quote(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: printable ASCII as it is, the rest escaped."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'
