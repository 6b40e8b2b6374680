"""The ``kubernetes`` launcher: the scheduler, servers and workers as pods of a cluster.

:mod:`.kube_manifests` makes the job's objects (a Secret, a headless Service and three Indexed
Jobs, or a JobSet); :func:`submit` creates them with the official Python client (``pip install
kubernetes``, imported only here and only when a job runs), watches the job's pods, streams
their logs prefixed with each pod's role and rank (the console of the local launcher, live
progress bars included; a stream that ends while its pod runs is reopened), and ends as the
local launcher does: 0 once every worker succeeded, else the exit status of the first pod that
failed for good, named. A failed worker (or a server whose keys have backups) is replaced by its
Job up to ``--max-restarts`` times and rejoins with its rank. When the job ends, fails, or is
interrupted (Ctrl-C, SIGTERM), the launcher prints the job summary and deletes every object it
created, unless ``--keep``.

``--dry-run`` prints the manifests as YAML (the Secret's values masked) and needs neither a
cluster nor the client.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import kube_manifests as km
from .console import Console
from .job import Job, LaunchError
from .kube_log import Stamped
from .summary import JobSummary

_API_TIMEOUT_S = 30.0  # one API request (connect and read), streams aside
_WATCH_S = 50  # a watch request's length (the server ends it, and it is made again)
_GRACE_S = 5.0  # for a pod's log to end once the pod ended
_DRAIN_S = 60.0  # for the scheduler and servers to end after the last worker succeeded
_NO_PODS_S = 60.0  # without a pod of the job by then, the launcher says where to look
_POLL_S = 0.5  # how often the launcher's own loop wakes up (signals, the drain deadline)
_WATCH_RETRIES = 5  # failed watch requests in a row before the launcher gives up
_LOG_RETRIES = 5  # reopenings of a pod's log in a row without a new line before giving it up
_LOG_RETRY_S = 1.0  # the wait before reopening a pod's log (doubled for the next, to 8x)
#: Waiting reasons of a container that will not start without the user's help.
_FATAL_WAITING = (
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
)
_IN_CLUSTER_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def submit(job: Job, dry_run=False, settings: km.KubeSettings | None = None, out=None, err=None):
    """Run ``job`` as pods of the current Kubernetes cluster (the kubeconfig's current context,
    else the cluster this runs in); returns the job's exit status. With ``dry_run`` print the
    manifests (YAML) instead. ``out``/``err``: where the pods' output and the launcher's own
    lines go (default: stdout and stderr)."""
    if settings is None:
        raise LaunchError("the kubernetes launcher needs --image IMAGE")
    if job.tls is not None:  # the certificates travel in the job's Secret, mounted in every pod
        settings.files = {**settings.files, **job.tls.files()}
    if not job.root_port:
        job.root_port = km.DEFAULT_PORT
    namespace = settings.namespace or _current_namespace()
    job.root_host = km.scheduler_host(settings, namespace)
    docs = km.build(job, settings, namespace)
    if dry_run:
        text = out or sys.stdout
        print(
            f"# mxrs-launch kubernetes: job {settings.name} in namespace {namespace}; the "
            f"scheduler at {job.root_host}:{job.root_port}; the Secret's values are masked",
            file=text,
        )
        print(km.to_yaml(km.masked(docs)), end="", file=text)
        return 0
    kube = _client()
    return _Run(kube, job, settings, namespace, docs, out, err).run()


class _Kube:
    """The parts of the ``kubernetes`` package the launcher uses, loaded once configured."""

    def __init__(self, client, api):
        self.api = api
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.ApiException = client.exceptions.ApiException


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise LaunchError(
            "the kubernetes launcher needs the Kubernetes Python client: pip install kubernetes "
            "(or pip install 'mxrs[kubernetes]'); --dry-run works without it"
        ) from None


def _client() -> _Kube:
    """A client of the kubeconfig's current context (``KUBECONFIG``, ``~/.kube/config``), else
    of the cluster this process runs in."""
    client = _import("kubernetes.client")
    config = _import("kubernetes.config")
    try:
        config.load_kube_config(config_file=_kubeconfig())
    except Exception as first:  # no kubeconfig, or no usable context in it
        try:
            config.load_incluster_config()
        except Exception:
            raise LaunchError(
                f"no Kubernetes cluster to run on: {first} (set KUBECONFIG or a context in "
                "~/.kube/config, or run inside a cluster)"
            ) from None
    return _Kube(client, client.ApiClient())


def _kubeconfig() -> str:
    """The kubeconfig file(s) as this process's environment names them now (the client reads
    ``KUBECONFIG`` only once, when it is imported)."""
    return os.environ.get("KUBECONFIG") or "~/.kube/config"


def _current_namespace() -> str:
    """The kubeconfig's current context's namespace, else this pod's, else ``default``."""
    try:
        config = importlib.import_module("kubernetes.config")
        _, active = config.list_kube_config_contexts(config_file=_kubeconfig())
        namespace = (active or {}).get("context", {}).get("namespace")
        if namespace:
            return namespace
    except Exception:  # no client or no kubeconfig: the other places
        pass
    try:
        with open(_IN_CLUSTER_NAMESPACE) as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


@dataclass
class _Pod:
    """One pod of the job as the launcher follows it."""

    name: str
    label: str
    role: str
    log: threading.Thread | None = None
    tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=20))
    ended: bool = False
    said_pending: bool = False
    #: Set once the pod ended or went, or the launcher stops: its log is then not reopened.
    over: threading.Event = field(default_factory=threading.Event)

    def end(self):
        """The watch saw the pod end (or go)."""
        self.ended = True
        self.over.set()


class _Interrupted(BaseException):
    """SIGINT or SIGTERM came (a BaseException, as KeyboardInterrupt: no handler of errors
    takes it for one)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class _Run:
    """One job on the cluster: create, follow, summarize, delete."""

    def __init__(self, kube, job: Job, settings, namespace, docs, out=None, err=None):
        self.kube = kube
        self.job = job
        self.settings = settings
        self.namespace = namespace
        self.docs = docs
        self.summary = JobSummary()
        self.console = Console(out or sys.stdout.buffer, job.progress, take=self.summary.take)
        self.err = err or sys.stderr
        self.created: list[dict[str, Any]] = []  # docs asked for (and maybe made)
        self.pods: dict[str, _Pod] = {}  # pod name -> pod
        self.failures: collections.Counter[str] = collections.Counter()  # label -> failures
        self.workers_done: set[str] = set()
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.stopping = threading.Event()
        self._streams: set[Any] = set()  # open streaming responses
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    def say(self, msg):
        """``mxrs-launch: msg`` on the launcher's stderr, above any live progress lines."""
        self.console.message(f"mxrs-launch: {msg}", self.err)

    # --- the whole run ------------------------------------------------------------------------

    def run(self):
        """Create the objects, follow the pods, then summarize and delete; returns the job's
        exit status (128 + N after signal N)."""
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM):
                previous[s] = signal.signal(s, self._on_signal)
        try:
            try:
                self._apply()
                status = self._follow()
            except _Interrupted as e:
                self.summary.stopping()
                self.say(f"interrupted (signal {e.signum}); stopping the job")
                status = 128 + e.signum
            except BaseException:
                self.summary.stopping()
                raise
            finally:
                for s in previous:  # a second Ctrl-C must not cut the clean-up short
                    signal.signal(s, signal.SIG_IGN)
                self._stop()
                self._print_summary()
                self._clean_up()
                self._close()
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        return status

    def _on_signal(self, signum, _frame):
        raise _Interrupted(signum)

    # --- creating and deleting --------------------------------------------------------------

    def _apply(self):
        for doc in self.docs:
            kind, name = doc["kind"], doc["metadata"]["name"]
            self.created.append(doc)  # before: an interrupted request may still have made it
            try:
                made = self._create(doc)
            except self.kube.ApiException as e:
                if e.status == 409:  # someone else's: never deleted here
                    self.created.remove(doc)
                    raise LaunchError(
                        f"a {kind} named {name} already exists in namespace {self.namespace}; "
                        "choose another --name"
                    ) from None
                raise LaunchError(f"cannot create {kind} {name}: {_api_error(e)}") from None
            except Exception as e:
                raise LaunchError(f"cannot create {kind} {name}: {_reach_error(e)}") from None
            self._check_kept(doc, made)
        port = self.job.root_port
        self.say(
            f"created job {self.settings.name} in namespace {self.namespace} (scheduler at "
            f"{self.job.root_host}:{port}); following its pods"
        )
        if self.job.metrics_port:
            self.say(
                f"Prometheus metrics on port {self.job.metrics_port} of the scheduler's and "
                "each server's pod (annotated prometheus.io/port)"
            )

    def _create(self, doc):
        """Create ``doc``; returns the object the server made (JSON)."""
        return json.loads(self._request("create", doc).data or b"{}")

    def _delete(self, doc):
        """Delete ``doc``'s object (a Job's or JobSet's pods go with it)."""
        _ = self._request("delete", doc).data  # read, so that the connection is free again

    def _request(self, verb, doc):
        """Create or delete ``doc``'s object; returns the server's raw reply."""
        kw: dict[str, Any] = {"_preload_content": False, "_request_timeout": _API_TIMEOUT_S}
        ns, kind = self.namespace, doc["kind"]
        if verb == "delete":
            kw["propagation_policy"] = "Background"  # the Jobs' pods go with them
            name = doc["metadata"]["name"]
            if kind == "Secret":
                return self.kube.core.delete_namespaced_secret(name, ns, **kw)
            if kind == "Service":
                return self.kube.core.delete_namespaced_service(name, ns, **kw)
            if kind == "Job":
                return self.kube.batch.delete_namespaced_job(name, ns, **kw)
            return self.kube.custom.delete_namespaced_custom_object(
                km.JOBSET_GROUP, km.JOBSET_VERSION, ns, km.JOBSET_PLURAL, name, **kw
            )
        if kind == "Secret":
            return self.kube.core.create_namespaced_secret(ns, doc, **kw)
        if kind == "Service":
            return self.kube.core.create_namespaced_service(ns, doc, **kw)
        if kind == "Job":
            return self.kube.batch.create_namespaced_job(ns, doc, **kw)
        return self.kube.custom.create_namespaced_custom_object(
            km.JOBSET_GROUP, km.JOBSET_VERSION, ns, km.JOBSET_PLURAL, doc, **kw
        )

    def _check_kept(self, doc, made):
        """Say so when the cluster dropped the per-index restarts (Kubernetes before 1.29, or
        the feature turned off): its Jobs then fail on the first failed pod."""
        if doc["kind"] != "Job" or "backoffLimitPerIndex" not in doc["spec"]:
            return
        if "backoffLimitPerIndex" not in (made.get("spec") or {}):
            self.say(
                f"the cluster dropped backoffLimitPerIndex from Job {doc['metadata']['name']} "
                "(it needs Kubernetes 1.29 or later): failed pods are not replaced"
            )

    def _clean_up(self):
        """Delete what was created (the Jobs' pods with them), or say how to, with --keep."""
        if not self.created:
            return
        kinds = "jobsets,secrets" if self.settings.jobset else "jobs,services,secrets"
        by_hand = f"kubectl delete -n {self.namespace} {kinds} -l {km.selector(self.settings)}"
        if self.settings.keep:
            self.say(f"kept job {self.settings.name} (--keep); delete it with: {by_hand}")
            return
        left = []
        for doc in reversed(self.created):
            try:
                self._delete(doc)
            except self.kube.ApiException as e:
                if e.status != 404:
                    left.append(f"{doc['kind']} {doc['metadata']['name']} ({_api_error(e)})")
            except Exception as e:
                left.append(f"{doc['kind']} {doc['metadata']['name']} ({_reach_error(e)})")
        if left:
            self.say(f"could not delete {', '.join(left)}; delete them with: {by_hand}")
        else:
            self.say(f"deleted job {self.settings.name}")

    # --- following the pods -----------------------------------------------------------------

    def _follow(self):
        """Watch the pods until the job ends; returns its exit status."""
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        deadline = None  # once every worker succeeded: when the others must have ended
        quiet_until: float | None = time.monotonic() + _NO_PODS_S  # to say that no pod came
        while True:
            try:
                kind, item = self.events.get(timeout=_POLL_S)
            except queue.Empty:
                kind, item = "tick", None
            if quiet_until is not None and time.monotonic() > quiet_until and not self.pods:
                quiet_until = None
                self.say(
                    f"no pod of the job after {_NO_PODS_S:.0f} s; see kubectl describe jobs -n "
                    f"{self.namespace} -l {km.selector(self.settings)} (quota, admission, ...)"
                )
            if kind == "error":
                raise LaunchError(f"lost the watch on the job's pods: {item}")
            if kind == "gone":
                self._on_gone(item)
            if kind == "pod":
                status = self._on_pod(item)
                if status is not None:
                    self.summary.stopping()
                    return status
            if deadline is None and len(self.workers_done) == self.job.num_workers:
                deadline = time.monotonic() + _DRAIN_S
            if deadline is not None:
                running = sorted({p.label for p in self.pods.values() if not p.ended})
                if not running and self._seen_all_roles():
                    return 0
                if time.monotonic() > deadline:
                    self.say(
                        f"{', '.join(running)} still running {_DRAIN_S:.0f} s after the last "
                        "worker finished; stopping them"
                    )
                    self.summary.stopping()
                    return 1

    def _seen_all_roles(self):
        return {p.role for p in self.pods.values()} >= {"scheduler", "server"}

    def _watch(self):
        """Put every change of the job's pods on the queue: a list, then a watch from it
        (listed again when the watch ends or its version expired)."""
        core, ns, sel = self.kube.core, self.namespace, km.selector(self.settings)
        version, failed = None, 0
        while not self.stopping.is_set():
            try:
                if version is None:
                    resp = core.list_namespaced_pod(
                        ns,
                        label_selector=sel,
                        _preload_content=False,
                        _request_timeout=_API_TIMEOUT_S,
                    )
                    listing = json.loads(resp.data)
                    version = listing["metadata"]["resourceVersion"]
                    for pod in listing.get("items") or ():
                        self.events.put(("pod", pod))
                resp = core.list_namespaced_pod(
                    ns,
                    label_selector=sel,
                    watch=True,
                    resource_version=version,
                    timeout_seconds=_WATCH_S,
                    _preload_content=False,
                    _request_timeout=(_API_TIMEOUT_S, _WATCH_S + _API_TIMEOUT_S),
                )
                with self._open(resp):
                    for line in resp:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":  # 410 Gone: list again
                            version = None
                            break
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self.events.put(("pod", obj))
                        elif event.get("type") == "DELETED":
                            self.events.put(("gone", obj))
                failed = 0
            except Exception as e:
                if self.stopping.is_set():
                    return
                failed += 1
                version = None
                if failed >= _WATCH_RETRIES:
                    self.events.put(("error", _watch_error(self.kube, e)))
                    return
                self.stopping.wait(failed)

    def _on_pod(self, pod):
        """Take a pod's new state; returns the job's exit status once it is decided."""
        meta, status = pod.get("metadata", {}), pod.get("status") or {}
        name = meta.get("name", "?")
        pod_labels = meta.get("labels") or {}
        role = pod_labels.get(km.LABEL_ROLE, "?")
        index = (meta.get("annotations") or {}).get(km.INDEX_KEY, pod_labels.get(km.INDEX_KEY))
        label = role if role == "scheduler" else f"{role} {index}"
        p = self.pods.get(name)
        if p is None:
            p = self.pods[name] = _Pod(name, label, role)
            self.summary.started(label, role)
        if p.ended:
            return None
        phase = status.get("phase", "Pending")
        if phase == "Pending":
            self._check_pending(p, status)
        if phase in ("Running", "Succeeded", "Failed") and p.log is None:
            self._start_log(p)
        if phase in ("Succeeded", "Failed"):
            p.end()
            return self._ended(p, phase, status)
        return None

    def _on_gone(self, pod):
        """A pod was deleted before it ended (by hand, or evicted): its Job replaces it."""
        p = self.pods.get(pod.get("metadata", {}).get("name"))
        if p is None or p.ended:
            return
        p.end()
        if p.log is not None:
            p.log.join(_GRACE_S)
        self.summary.ended(p.label, -signal.SIGKILL)
        self.say(f"{p.label} (pod {p.name}) was deleted; its Job replaces it")

    def _check_pending(self, p, status):
        for c in (status.get("initContainerStatuses") or []) + (
            status.get("containerStatuses") or []
        ):
            waiting = (c.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in _FATAL_WAITING:
                raise LaunchError(
                    f"{p.label} (pod {p.name}) cannot start: {waiting['reason']}: "
                    f"{waiting.get('message', '')}".rstrip(": ")
                )
        for cond in status.get("conditions") or []:
            if cond.get("reason") == "Unschedulable" and not p.said_pending:
                p.said_pending = True
                self.say(f"{p.label} (pod {p.name}) waits for a node: {cond.get('message', '')}")

    def _ended(self, p, phase, status):
        if p.log is not None:
            p.log.join(_GRACE_S)  # its last lines are out before what is said of it
        if phase == "Succeeded":
            self.summary.ended(p.label, 0)
            if p.role == "worker":
                self.workers_done.add(p.label)
            return None
        exit_status, why = _failure(status)
        self.summary.ended(p.label, exit_status)
        who = f"{p.label} (pod {p.name})"
        if _disrupted(status):
            self.say(f"{who} was disrupted ({why}); its Job replaces it")
            return None
        allowed = km.restarts(self.job, p.role)
        self.failures[p.label] += 1
        n = self.failures[p.label]
        if n <= allowed:
            self.say(f"{who} failed with {why}; restarting it ({n} of {allowed})")
            return None
        if p.role == "server" and self.job.replicas > 0:
            self.say(f"{who} failed with {why}; its keys are served by their backups")
            return None
        lines = b"".join(p.tail).decode(errors="replace").rstrip()
        shown = f"; its last lines:\n{lines}" if lines else ""
        self.say(f"{who} failed with {why}; stopping the job{shown}")
        return exit_status

    # --- logs -------------------------------------------------------------------------------

    def _start_log(self, p):
        earlier = [q.log for q in self.pods.values() if q.label == p.label and q.log is not None]
        for t in earlier:  # a replaced pod's last lines come before its successor's
            t.join(_GRACE_S)
        p.log = threading.Thread(target=self._stream_log, args=(p,), daemon=True)
        p.log.start()

    def _stream_log(self, p):
        """Show ``p``'s log as it comes. A stream that ends or fails before the watch saw the
        pod end (the API server restarted, a proxy timed out, the connection dropped) is opened
        again after a short wait, from its last line shown on, at most ``_LOG_RETRIES`` times
        in a row without a new line; one that ends after is the log's end."""
        log, failed = Stamped(), 0  # failed: reopenings in a row that brought no new line
        try:
            while True:
                error = None
                try:
                    resp = self._read_log(p, log.reopen())
                    with self._open(resp):
                        for chunk in resp.stream(65536):
                            data = log.take(chunk)
                            if data and failed:
                                failed = 0
                                self.say(f"reconnected the log of {p.label} (pod {p.name})")
                            self._show(p, data)
                except Exception as e:
                    error = e
                ended = p.over.is_set()  # the watch saw the pod end before its stream did
                if self.stopping.is_set():
                    return
                if ended:  # a pod whose container never ran has no log (an ApiException)
                    if error is not None and not isinstance(error, self.kube.ApiException):
                        self.say(f"lost the log of {p.label} (pod {p.name}): {_reach_error(error)}")
                    return
                # the pod's end may come late from the watch: then its last lines once more
                ended = p.over.wait(_LOG_RETRY_S * 2 ** min(failed, 3))
                if self.stopping.is_set():
                    return
                if failed == _LOG_RETRIES and not ended:
                    why = f": {_watch_error(self.kube, error)}" if error is not None else ""
                    self.say(
                        f"gave up on the log of {p.label} (pod {p.name}) after {failed} attempts "
                        f"to reopen it{why}"
                    )
                    return
                failed += 1
        finally:
            self._show(p, log.rest())
            p.tail.extend(line + b"\n" for line in self.console.close(p.label))

    def _read_log(self, p, since):
        """A stream of ``p``'s log, each line timestamped; the last ``since`` seconds of it when
        given (the client has no ``sinceTime``)."""
        return self.kube.core.read_namespaced_pod_log(
            p.name,
            self.namespace,
            container=km.CONTAINER,
            follow=True,
            timestamps=True,
            since_seconds=since,
            _preload_content=False,
            # none: a quiet pod is no failure (and the pod's end, seen by the watch, does not
            # wait for its log for long)
            _request_timeout=None,
        )

    def _show(self, p, data):
        if data:
            p.tail.extend(line + b"\n" for line in self.console.feed(p.label, data))

    @contextlib.contextmanager
    def _open(self, resp):
        """A context in which ``resp`` (a streaming response) is cut by :meth:`_stop`."""
        with self._lock:
            self._streams.add(resp)
        try:
            yield resp
        finally:
            with self._lock:
                self._streams.discard(resp)
            resp.close()

    def _stop(self):
        """End the watch and the log streams (cutting their connections)."""
        self.stopping.set()
        for p in list(self.pods.values()):  # no log waits to be reopened
            p.over.set()
        with self._lock:
            streams = list(self._streams)
        for resp in streams:
            sock = getattr(getattr(resp, "connection", None), "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _close(self):
        """Close the client's connections."""
        try:
            self.kube.api.close()
        except Exception:  # a client without close() or a pool already gone: nothing to do
            pass

    def _print_summary(self):
        deadline = time.monotonic() + _GRACE_S
        for p in list(self.pods.values()):
            if p.log is not None:
                p.log.join(max(0.0, deadline - time.monotonic()))
        lines = self.summary.format()
        if lines:
            self.console.message("\n".join(lines), self.err)


def _failure(status) -> tuple[int, str]:
    """A failed pod's exit status (1 when it has none) and what to say of it: its node
    container's exit code, else a failed init container's, else the pod's reason."""
    found = []
    for where, key in (("", "containerStatuses"), (" of {}", "initContainerStatuses")):
        for c in status.get(key) or []:
            done = (c.get("state") or {}).get("terminated") or {}
            code = done.get("exitCode")
            if isinstance(code, int) and (code != 0 or not where):
                why = f"exit status {code}" + where.format(c.get("name"))
                if done.get("reason") not in (None, "Error", "Completed"):
                    why += f" ({done['reason']})"
                found.append((code or 1, why))
    if found:
        return found[0]
    return 1, status.get("reason") or "no exit status"


def _disrupted(status) -> bool:
    """Whether the pod was stopped by Kubernetes (eviction, preemption, node drain): its Job
    replaces it without counting a failure (``podFailurePolicy``)."""
    return any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _api_error(e) -> str:
    """An API error as one line: status, reason and the server's message."""
    message = ""
    try:
        message = json.loads(e.body).get("message", "")
    except (ValueError, TypeError, AttributeError):
        pass
    return f"{e.status} {e.reason}" + (f": {message}" if message else "")


def _reach_error(e) -> str:
    """A failure to reach the API server, as one line."""
    return f"{type(e).__name__}: {e}".splitlines()[0]


def _watch_error(kube, e) -> str:
    return _api_error(e) if isinstance(e, kube.ApiException) else _reach_error(e)
