"""``mxrs-launch kubernetes``: its manifests against Kubernetes' own schemas, its API calls
against a stand-in API server on 127.0.0.1 (the real ``kubernetes`` client talks to it over
HTTP), and its command-line errors. No cluster is needed (nor reached)."""

import _thread
import base64
import http.server
import io
import json
import re
import sys
import threading
import time
import urllib.parse

import kubernetes_validate
import pytest
import yaml
from mxrs.launcher import cli, kube_log, kube_manifests, kubernetes
from mxrs.launcher.job import LaunchError

#: The Kubernetes versions whose schemas the manifests must pass: the first with
#: ``backoffLimitPerIndex`` on by default, and the newest the validator knows.
VERSIONS = ("1.29.0", kubernetes_validate.utils.latest_version())
COMMAND = ["--", "python", "train.py", "--lr", "$(x)"]
SHAPES = {
    "1x1": ["-n", "1", "-s", "1"],
    "2x2-restarts-gpus": [
        "-n",
        "2",
        "-s",
        "2",
        "--max-restarts",
        "2",
        "--gpus",
        "1",
        "--cpu",
        "2.5",
        "--memory",
        "4Gi",
        "--node-selector",
        "cloud.google.com/gke-nodepool=gpu",
        "--toleration",
        "nvidia.com/gpu:NoSchedule",
        "--toleration",
        "dedicated=ml:NoExecute",
        "--service-account",
        "trainer",
        "--metrics-port",
        "9100",
        "--env",
        "A=$(HOME) and $$",
    ],
    "jobset": ["-n", "3", "-s", "2", "--max-restarts", "1", "--jobset"],
}


def _parse(*extra, image="registry.example/mxrs:1"):
    argv = ["kubernetes", "--name", "demo", "--namespace", "ml"]
    argv += ["--image", image] if image else []
    return cli.parse([*argv, *extra, *COMMAND])


def _built(*extra):
    """(job, settings, manifests) as ``submit`` builds them."""
    _, job, args = _parse(*extra)
    settings = args.kube
    job.root_port = job.root_port or kube_manifests.DEFAULT_PORT
    job.root_host = kube_manifests.scheduler_host(settings, "ml")
    return job, settings, kube_manifests.build(job, settings, "ml")


def _pod_specs(docs):
    """{role: pod spec} of the Jobs or the JobSet's replicated Jobs."""
    out = {}
    for doc in docs:
        if doc["kind"] == "Job":
            out[doc["metadata"]["name"].rsplit("-", 1)[1]] = doc["spec"]["template"]["spec"]
        elif doc["kind"] == "JobSet":
            for rj in doc["spec"]["replicatedJobs"]:
                out[rj["name"]] = rj["template"]["spec"]["template"]["spec"]
    return out


def _env(spec):
    return {e["name"]: e for e in spec["containers"][0]["env"]}


def _validate(doc):
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            first = str(e).splitlines()[0]
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']} fails {version}: {first}")


# --- (a) the manifests against Kubernetes' schemas -----------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_every_manifest_passes_the_kubernetes_schemas(shape):
    """Strict validation (no unknown field) of every document. A JobSet is a custom resource
    whose schema Kubernetes does not have: its replicated Jobs' templates are validated as the
    Jobs the JobSet controller makes of them; the JobSet's own fields (network, successPolicy,
    failurePolicy, replicatedJobs) are checked by the assertions below, not by a schema."""
    _, settings, docs = _built(*SHAPES[shape])
    for doc in docs:
        if doc["kind"] != "JobSet":
            _validate(doc)
            continue
        assert doc["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
        spec = doc["spec"]
        assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
        assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["worker"]}
        assert spec["failurePolicy"] == {"maxRestarts": 0}
        assert [(rj["name"], rj["replicas"]) for rj in spec["replicatedJobs"]] == [
            ("scheduler", 1),
            ("server", 1),
            ("worker", 1),
        ]
        for rj in spec["replicatedJobs"]:
            as_job = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": f"demo-{rj['name']}-0", **rj["template"]["metadata"]},
                "spec": rj["template"]["spec"],
            }
            _validate(as_job)
    # and the dry run prints exactly these documents, the Secret masked
    out = io.StringIO()
    _, job, args = _parse(*SHAPES[shape])
    assert kubernetes.submit(job, dry_run=True, settings=args.kube, out=out) == 0
    printed = list(yaml.safe_load_all(out.getvalue()))
    masked = kube_manifests.masked(kube_manifests.build(job, args.kube, "ml"))
    assert printed == masked
    for doc in printed:
        if doc["kind"] != "JobSet":
            _validate(doc)
    assert job.secret not in out.getvalue()
    assert printed[0]["stringData"] == {"MXRS_SECRET": "<secret>"}


def test_each_pod_gets_its_address_rank_secret_and_the_job_settings():
    job, settings, docs = _built(*SHAPES["2x2-restarts-gpus"])
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert kinds == [
        ("Secret", "demo"),
        ("Service", "demo"),
        ("Job", "demo-scheduler"),
        ("Job", "demo-server"),
        ("Job", "demo-worker"),
    ]
    for doc in docs:  # every object says whose it is, for deleting them together
        assert doc["metadata"]["labels"]["mxrs/job"] == "demo"
        assert doc["metadata"]["namespace"] == "ml"
    service = docs[1]["spec"]
    assert service["clusterIP"] == "None" and service["selector"] == {"mxrs/job": "demo"}
    host = "demo-scheduler-0.demo.ml.svc"  # JOB-INDEX.SUBDOMAIN.NAMESPACE.svc
    assert job.root_host == host and job.root_port == 9091
    secret = job.secret
    assert base64.b64decode(docs[0]["data"]["MXRS_SECRET"]).decode() == secret
    assert secret not in json.dumps(docs[1:])  # only the Secret holds it
    specs = _pod_specs(docs)
    for role, spec in specs.items():
        env = _env(spec)
        assert spec["subdomain"] == "demo" and spec["restartPolicy"] == "Never"
        assert env["MXRS_SECRET"] == {
            "name": "MXRS_SECRET",
            "valueFrom": {"secretKeyRef": {"name": "demo", "key": "MXRS_SECRET"}},
        }
        assert env["DMLC_NODE_HOST"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        assert env["DMLC_ROLE"]["value"] == role
        assert env["DMLC_PS_ROOT_PORT"]["value"] == "9091"
        assert env["DMLC_NUM_WORKER"]["value"] == env["DMLC_NUM_SERVER"]["value"] == "2"
        assert env["MXRS_REPORT"]["value"] == "1" and env["MXRS_MAX_RESTARTS"]["value"] == "2"
        assert env["OMP_NUM_THREADS"]["value"] == "2"  # from --cpu 2.5
        assert env["A"]["value"] == "$$(HOME) and $$$$"  # taken literally, not expanded
        assert spec["serviceAccountName"] == "trainer"
        assert spec["nodeSelector"] == {"cloud.google.com/gke-nodepool": "gpu"}
        assert spec["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
        ]
        resources = spec["containers"][0]["resources"]
        assert resources["requests"] == {"cpu": "2.5", "memory": "4Gi"}
        gpus = resources["limits"].get("nvidia.com/gpu")
        assert gpus == ("1" if role == "worker" else None)
        if role == "scheduler":  # binds its own address; the others find it by name
            assert env["DMLC_PS_ROOT_URI"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
            assert "initContainers" not in spec
            assert env["MXRS_METRICS_PORT"]["value"] == "9100"
        else:
            assert env["DMLC_PS_ROOT_URI"]["value"] == host
            index = env["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
            assert index == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            rank = env["DMLC_WORKER_ID" if role == "worker" else "DMLC_SERVER_ID"]
            assert rank["value"] == "$(JOB_COMPLETION_INDEX)"
            names = list(env)  # a reference sees only the variables before it
            assert names.index("JOB_COMPLETION_INDEX") < names.index(rank["name"])
            (wait,) = spec["initContainers"]
            assert wait["command"][-2:] == [host, "300"]
            assert ("MXRS_METRICS_PORT" in env) == (role == "server")
    worker = specs["worker"]["containers"][0]
    assert worker["command"] == ["python", "train.py", "--lr", "$$(x)"]
    assert specs["server"]["containers"][0]["command"] == ["python", "-c", "import mxrs"]
    jobs = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "Job"}
    assert jobs["demo-worker"]["completionMode"] == "Indexed"
    assert jobs["demo-worker"]["completions"] == jobs["demo-worker"]["parallelism"] == 2
    # --max-restarts: each failed worker index is replaced twice; with backups, servers too
    assert jobs["demo-worker"]["backoffLimitPerIndex"] == 2
    assert jobs["demo-worker"]["maxFailedIndexes"] == 0
    assert jobs["demo-server"]["backoffLimitPerIndex"] == 2
    assert jobs["demo-server"]["maxFailedIndexes"] == 2  # one lost for good ends no Job
    assert jobs["demo-scheduler"]["backoffLimit"] == 0  # never restarted
    rule = jobs["demo-worker"]["podFailurePolicy"]["rules"][0]
    assert rule == {
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }


def test_without_restarts_the_first_failure_fails_each_job():
    _, _, docs = _built("-n", "2", "-s", "1")
    for doc in docs[2:]:
        assert doc["spec"]["backoffLimit"] == 0 and "backoffLimitPerIndex" not in doc["spec"]


def test_a_jobset_names_the_scheduler_by_its_own_rules():
    job, _, docs = _built(*SHAPES["jobset"])
    assert [d["kind"] for d in docs] == ["Secret", "JobSet"]
    assert job.root_host == "demo-scheduler-0-0.demo.ml.svc"  # JOBSET-RJOB-JOBINDEX-PODINDEX
    for role, spec in _pod_specs(docs).items():
        assert "subdomain" not in spec  # the JobSet sets it to its own Service
        if role != "scheduler":
            assert _env(spec)["DMLC_PS_ROOT_URI"]["value"] == job.root_host


def test_a_root_port_given_in_env_is_the_schedulers_port():
    job, _, docs = _built("-n", "1", "--env", "DMLC_PS_ROOT_PORT=7000")
    assert job.root_port == 7000 and docs[1]["spec"]["ports"][0]["port"] == 7000
    ports = _pod_specs(docs)["scheduler"]["containers"][0]["ports"]
    assert ports == [{"name": "scheduler", "containerPort": 7000}]


def test_secret_files_are_in_the_secret_and_mounted_read_only_in_every_pod():
    _, job, args = _parse("-n", "2", "-s", "1")
    settings = args.kube
    settings.files = {"tls.crt": b"CERT\n", "tls.key": b"\x00KEY"}
    job.root_port, job.root_host = 9091, kube_manifests.scheduler_host(settings, "ml")
    docs = kube_manifests.build(job, settings, "ml")
    data = docs[0]["data"]
    assert base64.b64decode(data["tls.crt"]) == b"CERT\n"
    assert base64.b64decode(data["tls.key"]) == b"\x00KEY"
    assert base64.b64decode(data["MXRS_SECRET"]).decode() == job.secret
    for spec in _pod_specs(docs).values():
        (volume,) = spec["volumes"]
        assert volume["secret"] == {
            "secretName": "demo",
            "defaultMode": 0o400,
            "items": [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}],
        }
        (mount,) = spec["containers"][0]["volumeMounts"]
        assert mount == {"name": volume["name"], "mountPath": "/etc/mxrs/secret", "readOnly": True}
    assert kube_manifests.secret_file_path("tls.crt") == "/etc/mxrs/secret/tls.crt"
    for doc in docs:
        _validate(doc)
    masked = kube_manifests.masked(docs)[0]["stringData"]
    assert masked == {"MXRS_SECRET": "<secret>", "tls.crt": "<5 bytes>", "tls.key": "<4 bytes>"}
    for bad in ("../x", "MXRS_SECRET", "a b"):
        with pytest.raises(LaunchError, match="secret file"):
            kube_manifests.secret_manifest(settings, "ml", "s", {bad: b""})
    # without files: no volume at all
    settings.files = {}
    for spec in _pod_specs(kube_manifests.build(job, settings, "ml")).values():
        assert "volumes" not in spec and "volumeMounts" not in spec["containers"][0]


def test_with_tls_the_certificates_travel_in_the_secret_and_every_pod_names_its_own():
    out = io.StringIO()
    _, job, args = _parse("-n", "2", "-s", "2", "--tls")
    assert kubernetes.submit(job, dry_run=True, settings=args.kube, out=out) == 0
    assert "PRIVATE KEY" not in out.getvalue()
    docs = kube_manifests.build(job, args.kube, "ml")
    data = {k: base64.b64decode(v).decode() for k, v in docs[0]["data"].items()}
    assert data["ca.pem"] == job.tls.ca
    # A certificate of its own for each pod: the scheduler's, and one per completion index.
    labels = ["scheduler", "server 0", "server 1", "worker 0", "worker 1"]
    assert sorted(job.tls.certs) == labels
    for label in labels:
        stem = label.replace(" ", "-")
        assert (data[f"{stem}.pem"], data[f"{stem}-key.pem"]) == job.tls.certs[label]
    for role, spec in _pod_specs(docs).items():
        env = _env(spec)
        stem = role if role == "scheduler" else f"{role}-$(JOB_COMPLETION_INDEX)"
        assert env["MXRS_TLS_CERT"]["value"] == f"/etc/mxrs/secret/{stem}.pem"
        assert env["MXRS_TLS_KEY"]["value"] == f"/etc/mxrs/secret/{stem}-key.pem"
        assert env["MXRS_TLS_CA"]["value"] == "/etc/mxrs/secret/ca.pem"
        names = [e["name"] for e in spec["containers"][0]["env"]]
        if role != "scheduler":  # defined before the reference, so that Kubernetes expands it
            assert names.index("JOB_COMPLETION_INDEX") < names.index("MXRS_TLS_CERT")
        (mount,) = spec["containers"][0]["volumeMounts"]
        assert mount["mountPath"] == "/etc/mxrs/secret" and mount["readOnly"]
    for doc in docs:
        _validate(doc)


def test_the_yaml_reads_back_as_the_documents():
    tricky = {
        "yes": ["no", "on", "0123", "1e3", "null", "~", "", "a: b", "#c", "- d", "'q'", '"dq"'],
        "text": "line\nnext\ttab \\ é ✓ 😀 \x07",
        "nested": [[1, 2], {"k": []}, {}, [{"a": {"b": None}}], True, False, 1.5, -3],
        "we/ird key": {"true": 1, "x.y/z": "v"},
    }
    docs = [*_built(*SHAPES["2x2-restarts-gpus"])[2], tricky]
    assert list(yaml.safe_load_all(kube_manifests.to_yaml(docs))) == docs


def test_the_dry_run_needs_no_kubernetes_package_and_a_real_run_says_how_to_get_it(
    monkeypatch, capsys
):
    for name in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    argv = ["kubernetes", "-n", "1", "--image", "img", "--name", "demo"]
    assert cli.main([*argv, "--dry-run", *COMMAND]) == 0
    out = capsys.readouterr().out
    assert "namespace default" in out  # no client to ask: the default namespace
    assert [d["kind"] for d in yaml.safe_load_all(out)][-1] == "Job"
    assert cli.main([*argv, *COMMAND]) == 2
    assert "pip install kubernetes" in capsys.readouterr().err


# --- (c) command-line errors --------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, said",
    [
        (["--image", ""], "needs --image IMAGE"),
        (["--node-selector", "pool"], "--node-selector 'pool': expected KEY=VALUE"),
        (["--node-selector", "a b=c"], "--node-selector 'a b=c'"),
        (["--toleration", "gpu:Sometimes"], "--toleration 'gpu:Sometimes': expected KEY"),
        (["--toleration", "=x"], "--toleration '=x'"),
        (["--cpu", "lots"], "--cpu 'lots': expected cores"),
        (["--cpu", "0"], "--cpu '0'"),
        (["--memory", "8GB"], "--memory '8GB': expected a quantity"),
        (["--gpus", "-1"], "--gpus must be 0 or more, got -1"),
        (["--gpus", "two"], "argument --gpus: invalid int value: 'two'"),
        (["--name", "Bad_Name"], "--name 'Bad_Name'"),
        (["--name", "x" * 41], "at most 40 characters"),
        (["--namespace", "No Such"], "--namespace 'No Such'"),
        (["--service-account", "a b"], "--service-account 'a b'"),
        (["--sync-dst-dir", "/tmp/x"], "--sync-dst-dir is not for the kubernetes launcher"),
        (["--env", "DMLC_WORKER_ID=1"], "--env DMLC_WORKER_ID"),
    ],
)
def test_bad_kubernetes_options_name_their_flag(capsys, extra, said):
    argv = ["kubernetes", "-n", "2", *(["--image", "img"] if extra[0] != "--image" else [])]
    with pytest.raises(SystemExit) as e:
        cli.parse([*argv, *extra, *COMMAND])
    assert e.value.code == 2
    assert said in capsys.readouterr().err


def test_a_missing_image_is_named(capsys):
    with pytest.raises(SystemExit):
        cli.parse(["kubernetes", "-n", "1", *COMMAND])
    assert "the kubernetes launcher needs --image IMAGE" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--image", "img"], ["--jobset"], ["--gpus", "1"], ["--keep"]])
def test_kubernetes_options_are_refused_with_other_launchers(capsys, flag):
    with pytest.raises(SystemExit):
        cli.parse(["local", "-n", "1", *flag, *COMMAND])
    assert f"{flag[0]} is an option of the kubernetes launcher, not of local" in (
        capsys.readouterr().err
    )


def test_kubernetes_takes_max_restarts_and_a_generated_name():
    argv = ["kubernetes", "-n", "2", "--image", "i", "--max-restarts", "3", *COMMAND]
    _, job, args = cli.parse(argv)
    assert job.max_restarts == 3
    assert re.fullmatch(r"mxrs-[0-9a-f]{6}", args.kube.name)


# --- (b) the API calls, against a stand-in API server ---------------------------------------

_PATHS = [
    ("Secret", r"/api/v1/namespaces/(?P<ns>[^/]+)/secrets"),
    ("Service", r"/api/v1/namespaces/(?P<ns>[^/]+)/services"),
    ("Job", r"/apis/batch/v1/namespaces/(?P<ns>[^/]+)/jobs"),
    ("JobSet", r"/apis/jobset.x-k8s.io/v1alpha2/namespaces/(?P<ns>[^/]+)/jobsets"),
]
_INDEX = kube_manifests.INDEX_KEY
#: A run against the stand-in server that takes longer is stopped as Ctrl-C stops it (and fails).
_HARD_TIMEOUT_S = 30


def _report(**fields):
    return b"mxrs-report: " + json.dumps(fields).encode() + b"\n"


def _log(role, rank):
    if role == "worker":
        bar = b"epoch 1: 50%\repoch 1: 100%\nstep 1\nstep 2\nstep 3\n"
        return bar + _report(role="worker", rank=rank, steps=10, samples=640, seconds=2.0)
    if role == "server":
        return b"serving\n" + _report(role="server", rank=rank, bytes_in=2048, bytes_out=4096)
    return b"scheduler listening\n"


def _stamp(at):
    """``at`` (seconds since the epoch) as Kubernetes stamps a log line: RFC 3339 in UTC, the
    nanoseconds' trailing zeros left out."""
    nanos = f".{round(at % 1 * 1e9):09d}".rstrip("0").rstrip(".")
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + nanos + "Z ").encode()


class _Cluster:
    """A Kubernetes API server stand-in: a real HTTP server on a free port of 127.0.0.1 that
    creates, lists, watches (chunked, as the API server streams) and deletes objects, and runs
    each Job's pods as ``outcomes`` says: {label: [(phase, exit code), ...]} one per attempt
    (default: Succeeded). A Job's pods start once the launcher watches; a failed pod is
    replaced while its Job's ``backoffLimitPerIndex`` allows. Each pod's log is canned, its
    lines a millisecond apart (stamped with ``timestamps=true``; ``sinceSeconds`` is honoured to
    the second, inclusive)."""

    def __init__(self, outcomes=None):
        self.outcomes = outcomes or {}
        self.objects = {}  # (kind, name) -> the body created
        self.requests = []  # (method, path, query)
        self.events = []  # (resourceVersion, type, pod)
        self.logs = {}  # pod name -> [(time, line)]
        self.on_log = None  # called with each pod whose log is read
        self.cut = {}  # pod name -> [K, ...]: its next streams end in line K + 1, one K each
        self.held = {}  # pod name -> None: it runs until a stream served its whole log (or
        # release(name)), then ends as the outcomes say
        self.cond = threading.Condition()
        self.jobs = []  # Jobs (name, spec) whose pods are still to run
        self.closing = False
        cluster = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                cluster.post(self)

            def do_GET(self):
                cluster.get(self)

            def do_DELETE(self):
                cluster.delete(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.handle_error = lambda *a: None  # a stream the launcher cut
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # --- HTTP -------------------------------------------------------------------------------

    def _split(self, h):
        url = urllib.parse.urlsplit(h.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        with self.cond:
            self.requests.append((h.command, url.path, query))
        return url.path, query

    def _reply(self, h, code, body):
        data = json.dumps(body).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _chunk(self, h, data):
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    def _start_stream(self, h, kind):
        h.send_response(200)
        h.send_header("Content-Type", kind)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

    def post(self, h):
        path, _ = self._split(h)
        body = json.loads(h.rfile.read(int(h.headers["Content-Length"])))
        kinds = [kind for kind, pattern in _PATHS if re.fullmatch(pattern, path)]
        if not kinds:
            return self._reply(h, 404, {"kind": "Status", "message": f"no {path}"})
        kind = kinds[0]
        name = body["metadata"]["name"]
        with self.cond:
            if (kind, name) in self.objects:
                return self._reply(h, 409, {"kind": "Status", "message": "exists"})
            self.objects[(kind, name)] = body
            if kind == "Job":
                self.jobs.append((name, body["spec"]))
            if kind == "JobSet":
                for rj in body["spec"]["replicatedJobs"]:
                    self.jobs.append((f"{name}-{rj['name']}-0", rj["template"]["spec"]))
        self._reply(h, 201, body)

    def delete(self, h):
        path, _ = self._split(h)
        base, _, name = path.rpartition("/")
        for kind, pattern in _PATHS:
            if re.fullmatch(pattern, base):
                with self.cond:
                    if self.objects.pop((kind, name), None) is not None:
                        return self._reply(h, 200, {"kind": "Status", "status": "Success"})
        self._reply(h, 404, {"kind": "Status", "message": "not found"})

    def get(self, h):
        path, query = self._split(h)
        match = re.fullmatch(r"/api/v1/namespaces/[^/]+/pods/([^/]+)/log", path)
        if match:
            return self._log(h, match.group(1), query)
        if not re.fullmatch(r"/api/v1/namespaces/[^/]+/pods", path):
            return self._reply(h, 404, {"kind": "Status", "message": f"no {path}"})
        if query.get("watch", "").lower() not in ("true", "1"):  # clients spell it True too
            with self.cond:
                latest = {}
                for _, _, pod in self.events:
                    latest[pod["metadata"]["name"]] = pod
                version = str(len(self.events))
            items = list(latest.values())
            meta = {"resourceVersion": version}
            return self._reply(h, 200, {"kind": "PodList", "metadata": meta, "items": items})
        self._run_jobs()  # the pods start once someone watches
        self._start_stream(h, "application/json")
        seen = [int(query.get("resourceVersion") or 0)]
        end = time.monotonic() + int(query.get("timeoutSeconds", 5))
        while True:
            with self.cond:
                self.cond.wait_for(
                    lambda: len(self.events) > seen[0] or self.closing, end - time.monotonic()
                )
                new = self.events[seen[0] :]
                if not new and (self.closing or time.monotonic() >= end):
                    break
            for version, kind, pod in new:
                self._chunk(h, json.dumps({"type": kind, "object": pod}).encode() + b"\n")
                seen[0] = version
        self._chunk(h, b"")

    def _log(self, h, name, query):
        if self.on_log is not None:
            self.on_log(name)
        stamped = query.get("timestamps", "").lower() == "true"
        since = int(time.time()) - int(query.get("sinceSeconds", time.time()))
        with self.cond:
            lines = [
                _stamp(at) * stamped + line for at, line in self.logs.get(name, ()) if at >= since
            ]
            cuts = self.cut.get(name)
            cut = cuts.pop(0) if cuts else None
        if cut is not None:  # as an API server going away ends it: in a line, its end lost
            lines = [*lines[:cut], lines[cut][:-3]]
        self._start_stream(h, "text/plain")
        data = b"".join(lines)
        for at in range(0, len(data), 7):  # in pieces, as it comes
            self._chunk(h, data[at : at + 7])
        if cut is None:
            self.release(name)
        self._chunk(h, b"")

    def release(self, name):
        """End a held pod (see ``held``)."""
        with self.cond:
            pod, status = self.held.pop(name, None) or (None, None)
            if pod is not None:
                pod["status"] = status
                self._event("MODIFIED", pod)

    # --- the Job controller ----------------------------------------------------------------

    def _event(self, kind, pod):
        self.events.append((len(self.events) + 1, kind, json.loads(json.dumps(pod))))
        pod["metadata"]["resourceVersion"] = str(len(self.events))
        self.cond.notify_all()

    def _run_jobs(self):
        with self.cond:
            jobs, self.jobs = self.jobs, []
            for name, spec in jobs:
                template = spec["template"]
                role = template["metadata"]["labels"]["mxrs/role"]
                for index in range(spec["completions"]):
                    label = role if role == "scheduler" else f"{role} {index}"
                    runs = self.outcomes.get(label, [("Succeeded", 0)])
                    allowed = spec.get("backoffLimitPerIndex", 0)
                    for attempt, (phase, code) in enumerate(runs[: allowed + 1]):
                        self._pod(name, template, role, index, attempt, phase, code)

    def _pod(self, job, template, role, index, attempt, phase, code):
        name = f"{job}-{index}-a{attempt}"
        labels = {**template["metadata"]["labels"], _INDEX: str(index), "job-name": job}
        meta = {"name": name, "labels": labels, "annotations": {_INDEX: str(index)}}
        pod = {"metadata": meta, "status": {"phase": "Pending"}}
        start = time.time()
        lines = [line + b"\n" for line in _log(role, index).split(b"\n")[:-1]]
        self.logs[name] = [(start + i / 1000, line) for i, line in enumerate(lines)]
        self._event("ADDED", pod)
        if phase == "ImagePullBackOff":  # the image cannot be had: it stays pending
            waiting = {"reason": phase, "message": "Back-off pulling image"}
            pod["status"]["containerStatuses"] = [{"name": "mxrs", "state": {"waiting": waiting}}]
            return self._event("MODIFIED", pod)
        pod["status"] = {"phase": "Running"}
        self._event("MODIFIED", pod)
        if phase == "Deleted":  # by hand, while it runs
            return self._event("DELETED", pod)
        if phase != "Running":
            state = {"terminated": {"exitCode": code, "reason": "Error" if code else "Completed"}}
            status = {"phase": phase, "containerStatuses": [{"name": "mxrs", "state": state}]}
            if name in self.held:  # it runs on for now
                self.held[name] = (pod, status)
                return None
            pod["status"] = status
            self._event("MODIFIED", pod)

    # --- what the launcher asked for -------------------------------------------------------

    def made(self, method):
        return [(p, q) for m, p, q in self.requests if m == method]


@pytest.fixture
def cluster_of(tmp_path, monkeypatch):
    """``cluster_of(outcomes)``: a stand-in API server, and a kubeconfig naming it whose
    current context's namespace is ``team-a``."""
    started = []
    watchdog = threading.Timer(_HARD_TIMEOUT_S, _thread.interrupt_main)
    watchdog.daemon = True
    watchdog.start()

    def make(outcomes=None):
        cluster = _Cluster(outcomes).__enter__()
        started.append(cluster)
        context = {"cluster": "mock", "user": "mock", "namespace": "team-a"}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "mock", "cluster": {"server": cluster.url}}],
            "users": [{"name": "mock", "user": {"token": "t"}}],
            "contexts": [{"name": "mock", "context": context}],
            "current-context": "mock",
        }
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        monkeypatch.setenv("KUBECONFIG", str(path))
        return cluster

    yield make
    watchdog.cancel()
    for cluster in started:
        cluster.__exit__()


def _run(capsys, *extra, n=2, s=1):
    argv = ["kubernetes", "-n", str(n), "-s", str(s), "--image", "img", "--name", "demo"]
    code = cli.main([*argv, *extra, *COMMAND])
    out, err = capsys.readouterr()
    return code, out, err


_ALL = {("Secret", "demo"), ("Service", "demo")} | {
    ("Job", f"demo-{r}") for r in ("scheduler", "server", "worker")
}


def _deleted(cluster):
    return sorted(p for p, _ in cluster.made("DELETE"))


def test_a_job_is_created_watched_logged_summarized_and_deleted(cluster_of, capsys):
    cluster = cluster_of()
    code, out, err = _run(capsys)
    assert code == 0, err
    posts = [p for p, _ in cluster.made("POST")]
    assert posts == [
        "/api/v1/namespaces/team-a/secrets",  # the kubeconfig context's namespace
        "/api/v1/namespaces/team-a/services",
        "/apis/batch/v1/namespaces/team-a/jobs",
        "/apis/batch/v1/namespaces/team-a/jobs",
        "/apis/batch/v1/namespaces/team-a/jobs",
    ]
    watches = [q for p, q in cluster.made("GET") if p.endswith("/pods") and q.get("watch")]
    assert watches and all(q["labelSelector"] == "mxrs/job=demo" for q in watches)
    logs = [(p, q) for p, q in cluster.made("GET") if p.endswith("/log")]
    assert len(logs) == 4
    assert all((q["container"], q["follow"].lower()) == ("mxrs", "true") for _, q in logs)
    # every line prefixed, the progress bar as it ended, the reports taken out
    assert "[worker 0] epoch 1: 100%\n" in out and "[worker 1] epoch 1: 100%\n" in out
    assert "[server 0] serving\n" in out and "[scheduler] scheduler listening\n" in out
    assert "mxrs-report" not in out
    assert "mxrs-launch: job summary" in err
    assert re.search(r"worker 0 +exit 0 +steps 10 +samples/s 320\.0", err), err
    assert re.search(r"server 0 +exit 0 +in 2\.0 KiB +out 4\.0 KiB", err), err
    assert "created job demo in namespace team-a" in err and "deleted job demo" in err
    assert cluster.objects == {}  # everything deleted, Jobs first, with their pods
    order = [p.rsplit("/", 2)[1:] for p, _ in cluster.made("DELETE")]
    assert order == [
        ["jobs", "demo-worker"],
        ["jobs", "demo-server"],
        ["jobs", "demo-scheduler"],
        ["services", "demo"],
        ["secrets", "demo"],
    ]
    assert all(q.get("propagationPolicy") == "Background" for _, q in cluster.made("DELETE"))


def test_what_is_created_is_what_the_manifests_say(cluster_of, capsys):
    cluster = cluster_of()
    code, _, err = _run(capsys, "--keep", "--namespace", "other")
    assert code == 0, err
    assert set(cluster.objects) == _ALL  # kept
    secret = cluster.objects[("Secret", "demo")]
    value = base64.b64decode(secret["data"]["MXRS_SECRET"]).decode()
    assert re.fullmatch("[0-9a-f]{64}", value)
    assert value not in json.dumps([b for k, b in cluster.objects.items() if k[0] != "Secret"])
    assert cluster.made("DELETE") == []
    assert "kept job demo (--keep); delete it with: kubectl delete -n other " in err
    assert "jobs,services,secrets -l mxrs/job=demo" in err


def test_a_failed_worker_fails_the_job_names_its_pod_and_everything_is_deleted(cluster_of, capsys):
    cluster = cluster_of({"worker 1": [("Failed", 3)]})
    code, _, err = _run(capsys)
    assert code == 3
    assert "worker 1 (pod demo-worker-1-a0) failed with exit status 3; stopping the job" in err
    assert "its last lines:\nepoch 1: 100%" in err
    assert re.search(r"worker 1 +exit 3", err)
    assert cluster.objects == {} and len(_deleted(cluster)) == 5


def test_a_failed_worker_with_restarts_left_is_replaced_and_the_job_succeeds(cluster_of, capsys):
    cluster = cluster_of({"worker 1": [("Failed", 3), ("Succeeded", 0)]})
    code, _, err = _run(capsys, "--max-restarts", "1")
    assert code == 0, err
    assert (
        "worker 1 (pod demo-worker-1-a0) failed with exit status 3; restarting it (1 of 1)" in err
    )
    assert re.search(r"worker 1 +exit 0 \(restarted 1×\)", err), err
    assert [p for p, _ in cluster.made("POST")][-1].endswith("/jobs")
    assert cluster.objects == {}


def test_a_deleted_pod_is_replaced_without_counting_as_a_failure(cluster_of, capsys):
    cluster = cluster_of({"worker 1": [("Deleted", 0), ("Succeeded", 0)]})
    code, _, err = _run(capsys, "--max-restarts", "1")
    assert code == 0, err
    assert "worker 1 (pod demo-worker-1-a0) was deleted; its Job replaces it" in err
    assert "restarting" not in err and cluster.objects == {}


def test_a_pod_whose_image_cannot_be_pulled_ends_the_launch(cluster_of, capsys):
    cluster = cluster_of({"worker 0": [("ImagePullBackOff", 0)]})
    code, _, err = _run(capsys)
    assert code == 2
    said = "worker 0 (pod demo-worker-0-a0) cannot start: ImagePullBackOff: Back-off pulling image"
    assert said in err
    assert cluster.objects == {} and len(_deleted(cluster)) == 5


def test_an_interrupt_stops_the_job_and_deletes_everything(cluster_of, capsys):
    cluster = cluster_of({"worker 0": [("Running", 0)]})
    interrupted = threading.Event()

    def ctrl_c(pod):  # Ctrl-C while worker 0 runs
        if pod.startswith("demo-worker-0") and not interrupted.is_set():
            interrupted.set()
            _thread.interrupt_main()

    cluster.on_log = ctrl_c
    code, _, err = _run(capsys)
    assert interrupted.is_set()
    assert code == 130
    assert "interrupted (signal 2); stopping the job" in err
    assert re.search(r"worker 0 +stopped", err), err
    assert cluster.objects == {} and len(_deleted(cluster)) == 5


def test_a_jobset_is_created_and_deleted_with_its_secret(cluster_of, capsys):
    cluster = cluster_of()
    code, _, err = _run(capsys, "--jobset", n=2, s=2)
    assert code == 0, err
    assert [p for p, _ in cluster.made("POST")] == [
        "/api/v1/namespaces/team-a/secrets",
        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets",
    ]
    assert re.search(r"server 1 +exit 0", err) and re.search(r"worker 1 +exit 0", err)
    assert _deleted(cluster) == [
        "/api/v1/namespaces/team-a/secrets/demo",
        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets/demo",
    ]


def test_a_name_in_use_is_an_error_and_what_was_there_stays(cluster_of, capsys):
    cluster = cluster_of()
    cluster.objects[("Job", "demo-worker")] = {"metadata": {"name": "demo-worker"}}
    code, _, err = _run(capsys)
    assert code == 2
    assert "a Job named demo-worker already exists in namespace team-a; choose another --name" in (
        err
    )
    assert set(cluster.objects) == {("Job", "demo-worker")}  # ours deleted, theirs kept
    assert "/apis/batch/v1/namespaces/team-a/jobs/demo-worker" not in _deleted(cluster)


def test_no_cluster_is_an_error_that_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, _, err = _run(capsys)
    assert code == 2 and "no Kubernetes cluster to run on" in err


def _log_reads(cluster, pod):
    return [q for p, q in cluster.made("GET") if p.endswith(f"/pods/{pod}/log")]


def test_a_log_stream_that_ends_while_its_pod_runs_is_reopened_and_no_line_is_lost(
    cluster_of, capsys, monkeypatch
):
    monkeypatch.setattr(kubernetes, "_LOG_RETRY_S", 0.05)
    monkeypatch.setattr(kube_log, "OVERLAP_S", 0)  # what the second's rounding repeats
    cluster = cluster_of()
    pod = "demo-worker-0-a0"
    cluster.cut[pod] = [2]  # once, in its third line (step 2): what came of it was shown
    cluster.held[pod] = None
    code, out, err = _run(capsys)
    assert code == 0, err
    shown = [line for line in out.splitlines() if line.startswith("[worker 0] ")]
    assert shown == [f"[worker 0] {x}" for x in ("epoch 1: 100%", "step 1", "step 2", "step 3")]
    assert "mxrs-report" not in out and "Z " not in out  # the timestamps taken off
    assert re.search(r"worker 0 +exit 0 +steps 10 +samples/s 320\.0", err), err  # its report
    assert err.count(f"mxrs-launch: reconnected the log of worker 0 (pod {pod})\n") == 1
    assert "gave up" not in err and "lost the log" not in err
    reads = _log_reads(cluster, pod)
    assert all(q["timestamps"].lower() == "true" for q in reads)
    assert "sinceSeconds" not in reads[0] and int(reads[1]["sinceSeconds"]) >= 1
    # the other pods' streams ended with their pods: read once
    assert [len(_log_reads(cluster, f"demo-{p}")) for p in ("worker-1-a0", "server-0-a0")] == [1, 1]


def test_a_log_stream_that_keeps_failing_is_given_up_and_the_job_still_ends(
    cluster_of, capsys, monkeypatch
):
    monkeypatch.setattr(kubernetes, "_LOG_RETRY_S", 0.02)
    monkeypatch.setattr(kubernetes, "_LOG_RETRIES", 3)
    cluster = cluster_of({"worker 1": [("Failed", 3)]})
    pod = "demo-worker-1-a0"
    cluster.cut[pod] = [1] * 10  # every stream ends in its second line
    cluster.held[pod] = None
    say = kubernetes._Run.say

    def said(run, msg):  # the pod fails once its log is given up
        say(run, msg)
        if msg.startswith("gave up"):
            cluster.release(pod)

    monkeypatch.setattr(kubernetes._Run, "say", said)
    code, out, err = _run(capsys)
    assert code == 3
    assert f"gave up on the log of worker 1 (pod {pod}) after 3 attempts to reopen it\n" in err
    assert len(_log_reads(cluster, pod)) == 4  # the first and three more, each after a wait
    assert out.count("[worker 1] epoch 1: 100%\n") == 1
    assert "[worker 1] step\n" in out and "[worker 1] step 1" not in out
    assert f"worker 1 (pod {pod}) failed with exit status 3; stopping the job" in err
    assert "reconnected" not in err and cluster.objects == {}


def test_the_log_of_a_pod_that_ended_is_not_reopened(cluster_of, capsys, monkeypatch):
    cluster = cluster_of()
    pod = "demo-worker-0-a0"
    cluster.cut[pod] = [2]  # its stream ends early, but the pod had ended: that is the end
    seen = threading.Event()
    end = kubernetes._Pod.end

    def seen_end(p):
        end(p)
        if p.name == pod:
            seen.set()

    monkeypatch.setattr(kubernetes._Pod, "end", seen_end)
    # its log is served once the launcher saw the pod end
    cluster.on_log = lambda name: name != pod or seen.wait(_HARD_TIMEOUT_S)
    code, out, err = _run(capsys)
    assert code == 0, err
    assert len(_log_reads(cluster, pod)) == 1
    assert "[worker 0] step 1\n[worker 0] step\n" in out  # what came of its third line
    assert "[worker 0] step 2" not in out and "Z " not in out
    assert "reconnected" not in err and "gave up" not in err


def test_log_timestamps_are_taken_off_wherever_chunks_split_and_repeats_are_left_out():
    log = (
        b"2024-05-01T10:00:00Z a\n"
        b"2024-05-01T10:00:00.5Z b 50%\rb 100%\n"
        b"2024-05-01T12:00:00.500000001+02:00 d\n"  # 10:00:00.500000001 UTC
        b"2024-05-01T10:00:01.25Z e"
    )
    whole = b"a\nb 50%\rb 100%\nd\ne"
    for k in range(len(log) + 1):
        stamped = kube_log.Stamped()
        assert stamped.take(log[:k]) + stamped.take(log[k:]) + stamped.rest() == whole
        # cut at k and reopened: the stream comes again from the start, and goes on
        stamped = kube_log.Stamped()
        first = stamped.take(log[:k])
        since = stamped.reopen()
        assert (since is None) == (k < 21)  # nothing begun: from the start
        assert first + stamped.take(log) + stamped.rest() == whole, k
    stamped = kube_log.Stamped()
    assert stamped.take(log[:60]) == b"a\nb 50%\rb 100%\n"  # d's timestamp not all there
    assert stamped.reopen() >= 1 + kube_log.OVERLAP_S
    assert stamped.take(b"no timestamp\n" + log[:100]) == b"no timestamp\nd\n"  # as it is
    assert stamped.rest() == b""  # e's timestamp cut short
    bad = b"2024-13-01T10:00:00Z x\n"  # no date
    assert kube_log.Stamped().take(bad) == bad
