"""deploy/kubernetes/: valid objects, and settings that agree with the server they run.

Every kustomization is built (in Python, `k8s_manifests.build`; checked against
`kubectl kustomize` where kubectl is installed) and each object is validated
against the Kubernetes JSON schema of its apiVersion and kind, strictly (an
unknown field fails), for the oldest and the newest Kubernetes we support. The
server's arguments are parsed by the real `nmt serve` parser, its probes are
asked of a running server, and the resource figures are compared with the
measurements in docs/performance.md that they cite.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import types
import urllib.error
import urllib.request
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from k8s_manifests import (
    build,
    canonical,
    json_patch,
    pod_spec,
    read_documents,
    read_kustomization,
    strategic_merge,
)

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "kubernetes"
DOCKERFILE = REPO / "docker" / "Dockerfile"
PERFORMANCE = REPO / "docs" / "performance.md"
DEPLOYMENT_DOC = REPO / "docs" / "deployment.md"
# What `kubectl apply -k` is meant for: the server overlays and the batch Job.
BUILDS = ("overlays/model-in-image", "overlays/model-from-volume", "batch")
# Applied with `kubectl apply -f` (an example to merge into the adapter's configuration).
STANDALONE = ("prometheus-adapter/rules.yaml",)
# The oldest Kubernetes whose API has every field used (podFailurePolicy on pod
# conditions, unhealthyPodEvictionPolicy), and the newest schemas kubernetes-validate ships.
KUBERNETES_VERSIONS = ("1.29", kubernetes_validate.utils.latest_version())

# monitoring.coreos.com/v1 ServiceMonitor is a CRD: the Kubernetes schemas do not have it.
# The fields used here, written from the Prometheus Operator's API reference; unknown fields
# fail, as in the strict Kubernetes schemas.
_DURATION = ("^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?"
             "(([0-9]+)ms)?)$")
_LABEL_SELECTOR = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {"type": "array", "items": {
            "type": "object", "required": ["key", "operator"], "additionalProperties": False,
            "properties": {"key": {"type": "string"},
                           "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                           "values": {"type": "array", "items": {"type": "string"}}}}},
    },
}
SERVICE_MONITOR_SCHEMA = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {
            "type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
                           "labels": {"type": "object",
                                      "additionalProperties": {"type": "string"}},
                           "annotations": {"type": "object",
                                           "additionalProperties": {"type": "string"}}}},
        "spec": {
            "type": "object", "required": ["selector", "endpoints"],
            "additionalProperties": False,
            "properties": {
                "selector": _LABEL_SELECTOR,
                "namespaceSelector": {
                    "type": "object", "additionalProperties": False,
                    "properties": {"any": {"type": "boolean"},
                                   "matchNames": {"type": "array",
                                                  "items": {"type": "string"}}}},
                "jobLabel": {"type": "string"},
                "endpoints": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "additionalProperties": False,
                    "properties": {
                        "port": {"type": "string"},
                        "path": {"type": "string"},
                        "scheme": {"enum": ["http", "https"]},
                        "interval": {"type": "string", "pattern": _DURATION},
                        "scrapeTimeout": {"type": "string", "pattern": _DURATION},
                        "honorLabels": {"type": "boolean"},
                    }}},
            },
        },
    },
}
CRD_SCHEMAS = {("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR_SCHEMA}


# --- helpers ------------------------------------------------------------------------------


def objects_of(directory: str) -> list[dict]:
    return build(DEPLOY / directory)


def one(objects: list[dict], kind: str, name: str | None = None) -> dict:
    found = [o for o in objects if o["kind"] == kind
             and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def container(obj: dict, name: str) -> dict:
    [found] = [c for c in pod_spec(obj)["containers"] if c["name"] == name]
    return found


def quantity(value) -> float:
    """A Kubernetes quantity (`2`, `500m`, `2560Mi`, `3Gi`, `2G`) as a number."""
    match = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?", str(value))
    if match is None:
        raise ValueError(f"not a quantity this test reads. Received: {value!r}")
    number, suffix = float(match.group(1)), match.group(2) or ""
    scale = {"": 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
             "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[suffix]
    return number * scale


def env_of(c: dict) -> dict[str, dict]:
    return {variable["name"]: variable for variable in c.get("env", [])}


def container_port(c: dict, port) -> int:
    """A container's port number from a probe's or Service's port (number or name)."""
    if isinstance(port, int):
        return port
    [number] = [p["containerPort"] for p in c["ports"] if p["name"] == port]
    return number


def serve_args(c: dict) -> argparse.Namespace:
    """The container's arguments parsed by the real `nmt serve` parser."""
    from serving.cli import add_serve_parser

    parser = argparse.ArgumentParser(prog="nmt", exit_on_error=False)
    add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *c["args"]])


def dockerfile() -> str:
    return DOCKERFILE.read_text(encoding="utf-8")


def dockerfile_json(instruction: str) -> list[str]:
    """The exec-form (JSON) arguments of a Dockerfile instruction."""
    match = re.search(rf"^{instruction} (\[.*?\])\s*$", dockerfile().replace("\\\n", " "),
                      re.MULTILINE)
    return json.loads(match.group(1))


def selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


@pytest.fixture(scope="module")
def server():
    return one(objects_of("overlays/model-in-image"), "Deployment", "nmt")


@pytest.fixture(scope="module")
def server_container(server):
    return container(server, "server")


@pytest.fixture(scope="module")
def job():
    return one(objects_of("batch"), "Job", "nmt-batch")


# --- valid objects --------------------------------------------------------------------------


def validate(obj: dict, version: str) -> None:
    schema = CRD_SCHEMAS.get((obj["apiVersion"], obj["kind"]))
    if schema is not None:
        jsonschema.validate(obj, schema)
    else:
        kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("directory", BUILDS + ("base",))
def test_every_object_validates_against_its_schema(directory, version):
    objects = objects_of(directory)

    assert objects
    for obj in objects:
        validate(obj, version)  # SchemaNotFoundError for a kind without any schema here


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", STANDALONE)
def test_the_standalone_manifests_validate(path, version):
    for obj in read_documents(DEPLOY / path):
        validate(obj, version)


def test_the_validation_refuses_a_misspelt_field(server):
    broken = json.loads(json.dumps(server))
    container(broken, "server")["readinessProbe"]["httpGet"]["pth"] = "/readyz"

    with pytest.raises(kubernetes_validate.ValidationError, match="pth"):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_service_monitor_schema_refuses_a_misspelt_field():
    monitor = one(objects_of("overlays/model-in-image"), "ServiceMonitor")
    broken = json.loads(json.dumps(monitor))
    broken["spec"]["endpoints"][0]["intervall"] = "15s"

    with pytest.raises(jsonschema.ValidationError, match="intervall"):
        validate(broken, KUBERNETES_VERSIONS[-1])


def test_every_manifest_file_is_used():
    used = {DEPLOY / path for path in STANDALONE}
    for kustomization in DEPLOY.rglob("kustomization.yaml"):
        used.add(kustomization)
        entries = read_kustomization(kustomization.parent)
        for entry in entries.get("resources", []) + [p["path"] for p in
                                                     entries.get("patches", []) if "path" in p]:
            used.add((kustomization.parent / entry).resolve())

    assert sorted(set(DEPLOY.rglob("*.yaml")) - used) == []


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl is not installed; the Python build alone is checked")
@pytest.mark.parametrize("directory", BUILDS + ("base",))
def test_the_python_build_equals_kubectl_kustomize(directory):
    printed = subprocess.run(["kubectl", "kustomize", str(DEPLOY / directory)],
                             capture_output=True, text=True, check=True, timeout=120).stdout

    assert canonical(objects_of(directory)) == canonical(list(yaml.safe_load_all(printed)))


def test_strategic_merge_merges_keyed_lists_and_replaces_others():
    base = {"containers": [{"name": "a", "args": ["1", "2"], "volumeMounts": [
        {"mountPath": "/tmp", "name": "tmp"}]}], "tolerations": [{"key": "x"}]}
    patch = {"containers": [{"name": "a", "args": ["3"], "volumeMounts": [
        {"mountPath": "/models", "name": "models"}]}, {"name": "b"}], "tolerations": []}

    merged = strategic_merge(base, patch)

    assert merged == {"containers": [
        {"name": "a", "args": ["3"], "volumeMounts": [{"mountPath": "/tmp", "name": "tmp"},
                                                      {"mountPath": "/models", "name": "models"}]},
        {"name": "b"}], "tolerations": []}
    assert base["containers"][0]["args"] == ["1", "2"]


def test_json_patch_appends_replaces_and_removes():
    obj = {"spec": {"metrics": [{"type": "Resource"}], "minReplicas": 2}}

    json_patch(obj, [{"op": "add", "path": "/spec/metrics/-", "value": {"type": "Pods"}},
                     {"op": "replace", "path": "/spec/minReplicas", "value": 3},
                     {"op": "remove", "path": "/spec/metrics/0"}])

    assert obj == {"spec": {"metrics": [{"type": "Pods"}], "minReplicas": 3}}
    with pytest.raises(ValueError, match="move"):
        json_patch(obj, [{"op": "move", "from": "/a", "path": "/b"}])


def test_a_kustomization_key_the_builder_lacks_is_refused(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: []\nnamePrefix: x-\n")

    with pytest.raises(ValueError, match="namePrefix"):
        build(tmp_path)


# --- the server -----------------------------------------------------------------------------


def test_the_image_and_its_entrypoint_are_those_docker_builds(server_container):
    built = re.search(r"docker build -f docker/Dockerfile -t (\S+) \.", dockerfile()).group(1)
    base_image = container(one(objects_of("base"), "Deployment", "nmt"), "server")["image"]

    assert base_image == built
    assert dockerfile_json("ENTRYPOINT") == ["nmt", "serve"]
    assert "command" not in server_container  # args replace the image's CMD only
    for directory in BUILDS:
        for obj in objects_of(directory):
            if pod_spec(obj) is not None:
                for c in pod_spec(obj)["containers"]:
                    assert c["image"].rsplit(":", 1)[0].endswith("/" + built)


def test_the_server_arguments_parse_and_validate_with_nmt_serve(server_container):
    from serving.cli import config_from_args

    args = serve_args(server_container)
    image_model = re.search(r"^COPY .*\$\{MODEL_DIR\} (\S+)$", dockerfile(), re.MULTILINE)

    assert str(args.model) == image_model.group(1)
    args.model = REPO / "models" / "en-fr"  # what the image holds at that path
    config = config_from_args(args)  # raises on any value ServerConfig refuses
    assert config.host == "0.0.0.0"


def test_named_ports_are_the_ports_the_server_listens_on(server_container):
    from nmt_api.protos import DEFAULT_GRPC_PORT
    from serving.server import DEFAULT_HTTP_PORT, DEFAULT_METRICS_PORT

    args = serve_args(server_container)
    ports = {p["name"]: p["containerPort"] for p in server_container["ports"]}

    assert ports == {"grpc": args.port, "http": args.http_port, "metrics": args.metrics_port}
    assert ports == {"grpc": DEFAULT_GRPC_PORT, "http": DEFAULT_HTTP_PORT,
                     "metrics": DEFAULT_METRICS_PORT}
    exposed = {int(p) for p in re.search(r"^EXPOSE (.+)$", dockerfile(),
                                         re.MULTILINE).group(1).split()}
    assert set(ports.values()) == exposed


def test_services_select_the_server_pods_on_its_named_ports(server, server_container):
    objects = objects_of("overlays/model-in-image")
    pod_labels = server["spec"]["template"]["metadata"]["labels"]
    names = {p["name"] for p in server_container["ports"]}

    services = [o for o in objects if o["kind"] == "Service"]
    assert {s["metadata"]["name"] for s in services} == {"nmt", "nmt-grpc"}
    for service in services:
        assert selects(service["spec"]["selector"], pod_labels)
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= names
    assert one(objects, "Service", "nmt-grpc")["spec"]["clusterIP"] == "None"  # headless
    assert selects(server["spec"]["selector"]["matchLabels"], pod_labels)


def test_probes_ask_the_http_port_for_paths_the_server_answers(server_container):
    args = serve_args(server_container)
    probes = {kind: server_container[kind]["httpGet"]
              for kind in ("startupProbe", "readinessProbe", "livenessProbe")}

    for probe in probes.values():
        assert container_port(server_container, probe["port"]) == args.http_port
    assert probes["readinessProbe"]["path"] == probes["startupProbe"]["path"] == "/readyz"
    assert probes["livenessProbe"]["path"] == "/healthz"
    # The startup probe allows the model load the Docker health check allows (start period).
    start_period = int(re.search(r"--start-period=(\d+)s", dockerfile()).group(1))
    startup = server_container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= start_period


class _FakeTranslator:
    info = types.SimpleNamespace(name="fake", version=1, attention="luong",
                                 precision="float32", precision_reason="test")

    def translate(self, sentences, options=None):
        return []


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_running_server_answers_the_probes_as_the_manifest_expects(server_container,
                                                                      tmp_path):
    import threading

    from nmt.paths import SAVED_MODEL_FILE
    from serving.server import ServerConfig
    from serving.testing import ServerThread, free_port

    (tmp_path / "1").mkdir()
    (tmp_path / "1" / SAVED_MODEL_FILE).touch()  # a version directory; the fake loads it
    loaded = threading.Event()

    def loader(path):
        loaded.wait(60)
        return _FakeTranslator()

    probes = {kind: server_container[kind]["httpGet"]["path"]
              for kind in ("startupProbe", "readinessProbe", "livenessProbe")}
    config = ServerConfig(model_dir=tmp_path, host="127.0.0.1", port=0,
                          http_port=free_port(), metrics_port=free_port(), poll_interval_s=0)
    with ServerThread(config, loader=loader) as running:
        http = f"http://127.0.0.1:{running.server.http_port}"
        before = {kind: _get(http + path) for kind, path in probes.items()}
        loaded.set()
        running.wait_until_serving(timeout=60)
        after = {kind: _get(http + path) for kind, path in probes.items()}
        metrics_path = "/metrics"
        metrics = urllib.request.urlopen(
            f"http://127.0.0.1:{running.server.metrics_port}{metrics_path}", timeout=10).read()

    assert before == {"startupProbe": 503, "readinessProbe": 503, "livenessProbe": 200}
    assert after == {"startupProbe": 200, "readinessProbe": 200, "livenessProbe": 200}
    monitor = one(objects_of("overlays/model-in-image"), "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["path"] == metrics_path
    assert b"nmt_queue_depth" in metrics


def test_termination_outlasts_the_prestop_sleep_and_the_drain(server, server_container):
    args = serve_args(server_container)
    command = server_container["lifecycle"]["preStop"]["exec"]["command"]

    assert command[0] == "sleep"
    pre_stop = float(command[1])
    assert pre_stop >= 1  # endpoints need a moment to drop the pod before the drain
    assert pod_spec(server)["terminationGracePeriodSeconds"] > pre_stop + args.grace


def test_the_server_runs_as_the_image_user_on_a_read_only_root(server):
    uid = int(re.search(r"useradd .*--uid (\d+) nmt", dockerfile()).group(1))
    spec = pod_spec(server)
    [c] = spec["containers"]

    assert spec["securityContext"]["runAsUser"] == uid
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts["/tmp"] in {v["name"] for v in spec["volumes"]}  # tempfile and Keras write
    assert env_of(c)["KERAS_HOME"]["value"].startswith("/tmp/")
    assert spec["enableServiceLinks"] is False  # no NMT_* variables from the Service `nmt`


def _measured_server_gb() -> float:
    text = PERFORMANCE.read_text(encoding="utf-8")
    words = r"Plan for about ([\d.]+) GB per server process with the defaults".split(" ")
    match = re.search(r"\s+".join(words), text)
    assert match, ("docs/performance.md no longer says how much memory to plan per server "
                   "process; update the resources of deploy/kubernetes/base/deployment.yaml "
                   "and this test together")
    return float(match.group(1))


def test_server_resources_follow_the_measured_figures(server_container):
    args = serve_args(server_container)
    resources = server_container["resources"]
    requests, limits = resources["requests"], resources["limits"]

    # Memory: docs/performance.md's plan per server process plus the translation cache.
    planned = _measured_server_gb() * 1e9 + args.cache_mb * 2**20
    assert quantity(requests["memory"]) >= planned
    assert quantity(limits["memory"]) >= quantity(requests["memory"])
    # CPU: the figures were taken on 2 cores with --workers one more than the cores.
    assert quantity(requests["cpu"]) == quantity(limits["cpu"]) == 2
    assert args.workers == quantity(limits["cpu"]) + 1
    # TensorFlow's inter-op pool follows the CPU limit (the flag's 0 leaves it to the
    # variable); one thread per operation, as measured.
    threads = env_of(server_container)["TF_NUM_INTEROP_THREADS"]["valueFrom"]["resourceFieldRef"]
    assert threads == {"resource": "limits.cpu", "divisor": "1"}
    assert args.inter_op_threads == 0 and args.intra_op_threads == 1
    assert "2,256 MB" in PERFORMANCE.read_text(encoding="utf-8")  # cited in the manifest


# --- availability and autoscaling -----------------------------------------------------------


def test_the_disruption_budget_and_autoscaler_target_the_server(server):
    objects = objects_of("overlays/model-in-image")
    pdb = one(objects, "PodDisruptionBudget")
    hpa = one(objects, "HorizontalPodAutoscaler")
    pod_labels = server["spec"]["template"]["metadata"]["labels"]

    assert selects(pdb["spec"]["selector"]["matchLabels"], pod_labels)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": server["apiVersion"],
                                             "kind": "Deployment", "name": "nmt"}
    assert pdb["spec"]["maxUnavailable"] < hpa["spec"]["minReplicas"]  # one always serves
    assert server["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_autoscaler_reads_cpu_and_a_queue_gauge_the_server_exports():
    from prometheus_client import CollectorRegistry

    from serving.metrics import ServingMetrics

    hpa = one(objects_of("overlays/model-in-image"), "HorizontalPodAutoscaler")
    kinds = {m["type"]: m for m in hpa["spec"]["metrics"]}
    name = kinds["Pods"]["pods"]["metric"]["name"]
    families = {f.name: f.type for f in ServingMetrics(CollectorRegistry()).registry.collect()}

    assert kinds["Resource"]["resource"]["name"] == "cpu"
    assert families.get(name) == "gauge"  # a counter would need a rate in the adapter's query
    assert kinds["Pods"]["pods"]["target"]["type"] == "AverageValue"
    [rules] = [yaml.safe_load(o["data"]["config.yaml"])["rules"]
               for o in read_documents(DEPLOY / "prometheus-adapter" / "rules.yaml")]
    [rule] = [r for r in rules if r["name"]["as"] == name]
    assert rule["seriesQuery"].startswith(name + "{")
    assert re.fullmatch(rule["name"]["matches"], name)
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}
    assert "<<.Series>>" in rule["metricsQuery"] and "<<.GroupBy>>" in rule["metricsQuery"]


def test_without_the_monitoring_component_the_autoscaler_needs_cpu_only():
    base = build(DEPLOY / "base")
    hpa = one(base, "HorizontalPodAutoscaler")

    assert [m["type"] for m in hpa["spec"]["metrics"]] == ["Resource"]
    assert not [o for o in base if o["apiVersion"].startswith("monitoring.coreos.com")]


def test_the_service_monitor_scrapes_each_pod_once_on_its_metrics_port(server_container):
    objects = objects_of("overlays/model-in-image")
    monitor = one(objects, "ServiceMonitor")
    chosen = [s for s in objects if s["kind"] == "Service"
              and selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]

    assert len(chosen) == 1
    [endpoint] = monitor["spec"]["endpoints"]
    [port] = [p for p in chosen[0]["spec"]["ports"] if p["name"] == endpoint["port"]]
    assert container_port(server_container, port["targetPort"]) == serve_args(
        server_container).metrics_port


def test_the_volume_overlay_mounts_the_models_read_only_over_the_image_model():
    objects = objects_of("overlays/model-from-volume")
    server = one(objects, "Deployment", "nmt")
    c = container(server, "server")
    [mount] = [m for m in c["volumeMounts"] if m["mountPath"] == str(serve_args(c).model)]
    [volume] = [v for v in pod_spec(server)["volumes"] if v["name"] == mount["name"]]
    claim = one(objects, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])

    assert mount["readOnly"] is True
    assert "ReadWriteMany" in claim["spec"]["accessModes"]  # every replica, on any node
    assert not [m for m in container(one(objects_of("overlays/model-in-image"), "Deployment"),
                                     "server")["volumeMounts"]
                if m["mountPath"] == mount["mountPath"]]


# --- the batch Job --------------------------------------------------------------------------


def batch_args(c: dict) -> argparse.Namespace:
    from batch.cli import add_batch_parser

    parser = argparse.ArgumentParser(prog="nmt", exit_on_error=False)
    add_batch_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(c["command"][1:] + c["args"])


def test_the_job_runs_nmt_batch_with_resume_on_its_volume(job, server_container):
    c = container(job, "batch")
    args = batch_args(c)
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}

    assert c["command"][:2] == ["nmt", "batch"]
    assert args.resume and args.no_progress
    assert args.model == str(serve_args(server_container).model)  # the image's model
    for path in (args.input, args.output):
        assert str(path).startswith(mounts["data"] + "/")
    assert pod_spec(job)["restartPolicy"] == "Never"  # podFailurePolicy needs it


def test_the_job_fails_at_once_on_the_exit_code_nmt_gives_bad_input(job, tmp_path):
    from nmt_cli.main import main

    [fail] = [r for r in job["spec"]["podFailurePolicy"]["rules"] if r["action"] == "FailJob"]
    code = main(["batch", str(tmp_path / "missing.txt"), str(tmp_path / "out.jsonl")])

    assert fail["onExitCodes"]["operator"] == "In" and code in fail["onExitCodes"]["values"]
    assert 0 not in fail["onExitCodes"]["values"]


def test_the_job_threads_and_memory_follow_the_measured_figures(job):
    c = container(job, "batch")
    text = PERFORMANCE.read_text(encoding="utf-8")
    # The in-process row of "Batch throughput": lines, lines/s, RSS after load, peak RSS.
    row = re.search(r"^\| in-process \| [\d,]+ \| \*\*[\d.]+\*\* \| ([\d,]+) \| ([\d,]+) \|",
                    text, re.MULTILINE)
    peak_mib = float(row.group(2).replace(",", ""))

    assert quantity(c["resources"]["requests"]["memory"]) >= peak_mib * 2**20
    assert quantity(c["resources"]["limits"]["memory"]) >= quantity(
        c["resources"]["requests"]["memory"])
    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        assert env_of(c)[name]["valueFrom"]["resourceFieldRef"]["resource"] == "limits.cpu"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True


# --- the page -------------------------------------------------------------------------------


def test_the_deployment_page_names_files_that_exist():
    text = DEPLOYMENT_DOC.read_text(encoding="utf-8")
    paths = set(re.findall(r"deploy/kubernetes/[\w./-]*[\w/]", text))

    assert paths
    assert [p for p in sorted(paths) if not (REPO / p).exists()] == []
