#!/usr/bin/env python3
"""Assertions on a rendered chart (helm template output), beyond what the Kubernetes API schemas check.

  check-rendered.py manifests <rendered.yaml> <name> <metrics.ts> <env.json>
      every component has its Deployment, Service, ServiceAccount, HPA and PDB; probes, resources, the restricted
      security context, a grace period longer than the drain; NetworkPolicies (default deny, who may reach whom);
      migration hook Jobs after their Secret (expand before the rollout, contract after it); the Ingress; ServiceMonitor, PrometheusRule and the dashboard (their
      PromQL parsed, every metric and label checked against packages/runtime/src/telemetry/metrics.ts, and against the
      CloudNativePG, Barman Cloud plugin and kubelet metrics below); with postgres.cloudnativepg, the Cluster, its
      roles, WAL archiver, ObjectStore, ScheduledBackup and PodMonitor against the services' URLs. Writes each
      Deployment's environment to env.json for check-env.mjs.
  check-rendered.py values-doc <values.yaml>
      every key of values.yaml has a comment above it (the components other than the gateway share its comments).
"""
import ipaddress
import json
import os
import pathlib
import re
import sys
from urllib.parse import parse_qs, unquote, urlsplit

import promql_parser
import yaml

COMPONENTS = ["gateway", "users", "groups", "drives", "scim", "webhooks"]
SERVICES = COMPONENTS[1:]
# The services with a database (roles, Secrets, a migration Job, PostgreSQL egress); the SCIM service has none.
DATABASE_SERVICES = [s for s in SERVICES if s != "scim"]
GRPC_PORTS = {"users": 50051, "groups": 50052, "drives": 50053, "scim": 50054, "webhooks": 50055}
METRICS_PORTS = {"gateway": 9460, "users": 9461, "groups": 9462, "drives": 9463, "scim": 9464, "webhooks": 9465}
HTTP_PORT = 8080
# Who may open a connection to whom inside the release (component -> component): the chart's call graph, which
# `npm test` checks against the RPCs' callers in proto/ (packages/runtime/src/grpc/call-graph.test.ts).
# `operator` is no component: the pods of the operator's commands (templates/operator.yaml) and the services they call.
with open(pathlib.Path(__file__).parent / "mileage" / "call-graph.yaml") as call_graph:
    ALLOWED_CALLS = {(caller, callee) for caller, callees in yaml.safe_load(call_graph).items() for callee in callees}
OPERATOR = "operator"
OPERATOR_CALLS = sorted(callee for caller, callee in ALLOWED_CALLS if caller == OPERATOR)
OPERATOR_SCRIPT = ["node", "tools/devstack/dist/org.js"]
# The documented one-off operator Job (docs/operations-helm.md): the chart's CronJob pod but for its args, for a release
# "mileage" in the namespace "mileage" with mutual TLS and Redis.
OPERATOR_EXAMPLE = pathlib.Path(__file__).parent / "examples" / "offboard-job.yaml"
# The migration phases (expand → contract): each service's migration Job per phase, its hook, its MIGRATION_PHASE.
# Expand before any pod of the release changes; contract once the release's pods serve (the old ones are gone).
MIGRATION_PHASES = {"expand": ("", "pre-install,pre-upgrade"), "contract": ("-contract", "post-install,post-upgrade")}
# With postgres.cloudnativepg the Cluster is made with the release: on install, expand runs after it (post-install).
CNPG_EXPAND_HOOK = "post-install,pre-upgrade"
# The metrics of the PostgreSQL exporters the database alerts read, as their sources name them (with their own labels;
# the target's are TARGET_LABELS): CloudNativePG v1.30's instance exporter (pkg/management/postgres/webserver/
# metricserver/pg_collector.go: cnpg_collector_*; config/manager/default-monitoring.yaml: cnpg_pg_stat_archiver_*), the
# Barman Cloud plugin v0.15's (internal/cnpgi/instance/metrics.go) and the kubelet's volume statistics.
EXTERNAL_METRICS = {
    "cnpg_collector_pg_wal_archive_status": {"value"},
    "cnpg_collector_pg_wal": {"value"},
    "cnpg_pg_stat_archiver_last_failed_time": set(),
    "cnpg_pg_stat_archiver_last_archived_time": set(),
    "cnpg_pg_stat_archiver_failed_count": set(),
    "cnpg_pg_stat_archiver_seconds_since_last_archival": set(),
    "barman_cloud_cloudnative_pg_io_last_available_backup_timestamp": set(),
    "barman_cloud_cloudnative_pg_io_last_failed_backup_timestamp": set(),
    "barman_cloud_cloudnative_pg_io_first_recoverability_point": set(),
    "kubelet_volume_stats_available_bytes": {"persistentvolumeclaim"},
    "kubelet_volume_stats_capacity_bytes": {"persistentvolumeclaim"},
}
BARMAN_CLOUD_PLUGIN = "barman-cloud.cloudnative-pg.io"
# The only rule allowed to reach the whole internet: the Webhooks service's deliveries, on 443, without the private,
# loopback and link-local ranges (its own checks refuse them too).
NON_PUBLIC = {4: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "169.254.0.0/16"],
              6: ["fc00::/7", "fe80::/10", "::1/128"]}
# Labels Prometheus (the Operator's ServiceMonitor) adds to every scraped series.
TARGET_LABELS = {"namespace", "service", "pod", "job", "instance", "container", "endpoint"}
# The chart-managed gRPC certificates' hook Job (and its ServiceAccount, Role, RoleBinding, NetworkPolicy).
ISSUER = "grpc-issuer"
COMMON_LABELS = ["app.kubernetes.io/part-of", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                 "app.kubernetes.io/managed-by", "helm.sh/chart"]

problems = []


def fail(message):
    problems.append(message)


# ---------------------------------------------------------------------------------------------------- helpers


def quantity(value):
    """A Kubernetes quantity as a float (cores or bytes)."""
    text = str(value)
    units = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    match = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", text)
    if not match or (match.group(2) and match.group(2) not in units):
        raise ValueError(f"not a quantity: {text}")
    return float(match.group(1)) * units.get(match.group(2), 1)


def selects(selector, labels):
    """Does a LabelSelector (matchLabels / matchExpressions) select these labels?"""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, op, values = expression["key"], expression["operator"], expression.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def port_matches(rule_ports, port, protocol="TCP"):
    if not rule_ports:
        return True
    for p in rule_ports:
        if p.get("protocol", "TCP") == protocol and (p.get("port") is None or p["port"] == port.get("number") or p["port"] == port.get("name")):
            return True
    return False


def promql_walk(node):
    yield node
    for attr in ("lhs", "rhs", "expr", "vector_selector", "param"):
        child = getattr(node, attr, None)
        if child is not None and hasattr(child, "prettify"):
            yield from promql_walk(child)
    for arg in getattr(node, "args", None) or []:
        if hasattr(arg, "prettify"):
            yield from promql_walk(arg)


def label_list(source, items):
    """The label names of a TypeScript array's items, following `...NAME` into `const NAME = [...]` of the source."""
    labels = set(re.findall(r"'([a-z_]+)'", items))
    for name in re.findall(r"\.\.\.([A-Z_]+)", items):
        named = re.search(r"const " + name + r" = \[(.*?)\]", source, re.S)
        labels |= label_list(source, named.group(1)) if named else set()
    return labels


def metric_catalogue(metrics_ts):
    """{series name: label names} from packages/runtime/src/telemetry/metrics.ts and the metrics the outbox relay, the
    Webhooks service's delivery worker, the gateway and the Users service's data lifecycle add (histograms give
    _bucket/_count/_sum)."""
    root = os.path.abspath(metrics_ts).split(os.sep + os.path.join("packages", "runtime") + os.sep)[0]
    source = open(metrics_ts).read()
    for extra in ("packages/runtime/src/outbox/outbox-relay.ts", "services/webhooks/src/worker.ts", "gateway/src/main.ts",
                  "services/users/src/lifecycle-metrics.ts"):
        source += "\n" + open(os.path.join(root, extra)).read()
    catalogue = {}
    # `new Gauge({ name: ... })` and the get-or-create `metrics.counter({ name: ... })`; the generic constructors
    # inside those helpers (`new Counter({ ...config })`) name no metric.
    for kind, body in re.findall(r"(?:new |\.)(Counter|Histogram|Gauge|counter|histogram|gauge)\(\{(.*?)\}\)", source, re.S):
        kind = kind.capitalize()
        named = re.search(r"name: '([a-z_:]+)'", body)
        if named is None:
            continue
        name = named.group(1)
        listed = re.search(r"labelNames: (?:\[(.*?)\]|([A-Z_]+))", body)
        labels = label_list(source, listed.group(1) if listed and listed.group(1) else f"...{listed.group(2)}" if listed else "")
        labels.add("service")  # the registry's default label (exported_service once scraped next to the target's)
        labels.add("exported_service")
        if kind == "Histogram":
            catalogue[name + "_bucket"] = labels | {"le"}
            catalogue[name + "_count"] = labels
            catalogue[name + "_sum"] = labels
        else:
            catalogue[name] = labels
    if "http_server_request_duration_seconds_bucket" not in catalogue or "grpc_server_handled_total" not in catalogue:
        raise SystemExit(f"{metrics_ts}: the RED metrics were not found")
    if "collectDefaultMetrics(" in source:
        # prom-client's default metrics (the ones the dashboard reads), labelled like the rest.
        for default in ("process_cpu_seconds_total", "process_resident_memory_bytes", "nodejs_eventloop_lag_p99_seconds",
                        "nodejs_heap_size_used_bytes"):
            catalogue[default] = {"service", "exported_service"}
    catalogue["up"] = set()
    catalogue.update(EXTERNAL_METRICS)
    return catalogue


def check_promql(where, expr, catalogue):
    """Parses a PromQL expression and checks its metrics and labels; returns the parsed tree's nodes."""
    try:
        tree = promql_parser.parse(expr)
    except Exception as err:  # noqa: BLE001 - the parser raises plain exceptions
        fail(f"{where}: PromQL does not parse ({err}): {expr}")
        return []
    nodes = list(promql_walk(tree))
    metrics_used = set()
    for node in nodes:
        if isinstance(node, promql_parser.VectorSelector):
            if node.name not in catalogue:
                fail(f"{where}: metric {node.name} is not exported by the processes")
                continue
            metrics_used.add(node.name)
            for matcher in node.matchers.matchers:
                if matcher.name not in catalogue[node.name] | TARGET_LABELS:
                    fail(f"{where}: {node.name} has no label {matcher.name}")
    known = set().union(*(catalogue[m] for m in metrics_used)) | TARGET_LABELS if metrics_used else TARGET_LABELS
    for node in nodes:
        if isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            for label in node.modifier.labels:
                if label not in known:
                    fail(f"{where}: aggregates by {label}, a label none of its metrics has")
    return nodes


# ------------------------------------------------------------------------------------------------- manifests


def check_manifests(path, name, metrics_ts, env_out):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    catalogue = metric_catalogue(metrics_ts)

    def by_kind(kind):
        return [d for d in docs if d["kind"] == kind]

    def component_of(doc):
        return doc["metadata"].get("labels", {}).get("app.kubernetes.io/component")

    release = None
    for doc in docs:
        meta = doc["metadata"]
        labels = meta.get("labels", {})
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", meta["name"]) or len(meta["name"]) > 63:
            fail(f"{doc['kind']} {meta['name']}: not a valid name of at most 63 characters")
        for label in COMMON_LABELS:
            if label not in labels:
                fail(f"{doc['kind']} {meta['name']}: no label {label}")
        release = release or labels.get("app.kubernetes.io/instance")
        if component_of(doc) in COMPONENTS and labels.get("app.kubernetes.io/name") != f"mileage-{component_of(doc)}":
            fail(f"{doc['kind']} {meta['name']}: app.kubernetes.io/name does not name its component")

    secrets = {s["metadata"]["name"]: s for s in by_kind("Secret")}
    for secret in secrets.values():
        if "data" not in secret and "stringData" not in secret:
            fail(f"Secret {secret['metadata']['name']}: empty")

    # --- per component: Deployment, Service, ServiceAccount, HPA, PDB
    deployments = {component_of(d): d for d in by_kind("Deployment")}
    if sorted(deployments) != sorted(COMPONENTS):
        fail(f"Deployments for {sorted(deployments)}, expected {COMPONENTS}")
    services = {component_of(s): s for s in by_kind("Service")}
    accounts = {component_of(s): s for s in by_kind("ServiceAccount") if component_of(s) not in (ISSUER, OPERATOR)}
    operator_account = next((a for a in by_kind("ServiceAccount") if component_of(a) == OPERATOR), None)
    # The operator's client certificate, when the chart gives the operator an identity (operator.enabled).
    operator_secret = f"{operator_account['metadata']['name']}-grpc-tls" if operator_account else None
    hpas = {h["spec"]["scaleTargetRef"]["name"]: h for h in by_kind("HorizontalPodAutoscaler")}
    pdbs = by_kind("PodDisruptionBudget")
    envs = {}
    attestations = {}
    tls_secrets = {}
    spiffe_prefixes = {}

    for component, deployment in deployments.items():
        where = f"{component}"
        spec = deployment["spec"]
        template = spec["template"]
        pod_labels = template["metadata"]["labels"]
        pod = template["spec"]
        if not selects(spec["selector"], pod_labels):
            fail(f"{where}: the Deployment's selector does not select its pods")
        annotations = template["metadata"].get("annotations", {})
        if not re.fullmatch(r"[0-9a-f]{64}", str(annotations.get("checksum/secrets", ""))):
            fail(f"{where}: pod annotation checksum/secrets (a sha256) missing")

        # Service
        service = services.get(component)
        if not service:
            fail(f"{where}: no Service")
        elif not selects({"matchLabels": service["spec"]["selector"]}, pod_labels):
            fail(f"{where}: the Service does not select the pods")
        # ServiceAccount
        account = accounts.get(component)
        if not account:
            fail(f"{where}: no ServiceAccount")
        else:
            if account.get("automountServiceAccountToken") is not False:
                fail(f"{where}: the ServiceAccount automounts its token")
            if pod.get("serviceAccountName") != account["metadata"]["name"]:
                fail(f"{where}: the pods do not use the component's ServiceAccount")
        if pod.get("automountServiceAccountToken") is not False:
            fail(f"{where}: the pods mount a service account token")
        # HPA
        hpa = hpas.get(deployment["metadata"]["name"])
        if not hpa:
            fail(f"{where}: no HorizontalPodAutoscaler")
        else:
            if hpa["apiVersion"] != "autoscaling/v2" or hpa["spec"]["scaleTargetRef"]["kind"] != "Deployment":
                fail(f"{where}: the HPA is not autoscaling/v2 on the Deployment")
            if hpa["spec"]["minReplicas"] > hpa["spec"]["maxReplicas"]:
                fail(f"{where}: HPA minReplicas > maxReplicas")
            if "replicas" in spec:
                fail(f"{where}: replicas is set although an HPA owns the count")
        # PDB
        mine = [p for p in pdbs if selects(p["spec"]["selector"], pod_labels)]
        if len(mine) != 1:
            fail(f"{where}: {len(mine)} PodDisruptionBudgets select the pods, expected 1")

        # Pod security (restricted)
        psc = pod.get("securityContext", {})
        if psc.get("runAsNonRoot") is not True or not psc.get("runAsUser") or psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            fail(f"{where}: pod securityContext is not restricted (runAsNonRoot, runAsUser > 0, seccomp RuntimeDefault)")
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            if pod.get(field):
                fail(f"{where}: {field}")
        tmp_volumes = {v["name"] for v in pod.get("volumes", []) if "emptyDir" in v}

        containers = pod["containers"]
        if len(containers) != 1:
            fail(f"{where}: {len(containers)} containers, expected 1")
        container = containers[0]
        sc = container.get("securityContext", {})
        if (sc.get("allowPrivilegeEscalation") is not False or sc.get("readOnlyRootFilesystem") is not True
                or sc.get("capabilities", {}).get("drop") != ["ALL"] or sc.get("capabilities", {}).get("add")
                or sc.get("privileged") or sc.get("runAsNonRoot") is not True or sc.get("runAsUser") == 0):
            fail(f"{where}: container securityContext is not restricted")
        if not any(m["mountPath"] == "/tmp" and m["name"] in tmp_volumes for m in container.get("volumeMounts", [])):
            fail(f"{where}: no emptyDir at /tmp for the read-only root filesystem")
        image = container["image"]
        if not re.fullmatch(r"[^:@\s]+(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?(@sha256:[0-9a-f]{64})?", image.split("/", 1)[-1] if "/" in image else image) or image.endswith(":latest") or not re.search(r"[:@][^/]*$", image):
            fail(f"{where}: image {image} is not pinned")

        resources = container.get("resources", {})
        for part in ("requests", "limits"):
            if not {"cpu", "memory"} <= set(resources.get(part, {})):
                fail(f"{where}: resources.{part} lacks cpu or memory")
        try:
            for r in ("cpu", "memory"):
                if quantity(resources["requests"][r]) > quantity(resources["limits"][r]):
                    fail(f"{where}: {r} request above its limit")
        except (KeyError, ValueError) as err:
            fail(f"{where}: resources: {err}")

        ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        if ports.get("metrics") != METRICS_PORTS[component]:
            fail(f"{where}: metrics port {ports.get('metrics')}, expected {METRICS_PORTS[component]}")
        env = {}
        for e in container.get("env", []):
            if e["name"] in env:
                fail(f"{where}: {e['name']} set twice")
            if "value" in e:
                if re.search(r"SECRET|PASSWORD|DATABASE_URL|REDIS_URL", e["name"]):
                    fail(f"{where}: {e['name']} is a literal, not a Secret reference")
                env[e["name"]] = e["value"]
            else:
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if not ref:
                    fail(f"{where}: {e['name']} neither a value nor a secretKeyRef")
                    continue
                secret = secrets.get(ref["name"])
                if secret is not None:
                    data = secret.get("stringData", {})
                    if ref["key"] not in data:
                        # An optional key the Secret lacks leaves the variable unset (a previous key between rotations).
                        if ref.get("optional"):
                            continue
                        fail(f"{where}: {e['name']} refers to {ref['name']}/{ref['key']}, which the chart's Secret lacks")
                    env[e["name"]] = {"secret": ref["name"], "key": ref["key"], "value": data.get(ref["key"])}
                else:
                    env[e["name"]] = {"secret": ref["name"], "key": ref["key"]}
        envs[component] = env
        if env.get("METRICS_HOST") != "0.0.0.0" or env.get("METRICS_PORT") != str(METRICS_PORTS[component]):
            fail(f"{where}: metrics must listen on 0.0.0.0:{METRICS_PORTS[component]}")

        # Probes
        probes = {k: container.get(k) for k in ("startupProbe", "livenessProbe", "readinessProbe")}
        for kind, probe in probes.items():
            if not probe:
                fail(f"{where}: no {kind}")
        if component == "gateway":
            if ports.get("http") != HTTP_PORT or env.get("HOST") != "0.0.0.0" or env.get("PORT") != str(HTTP_PORT):
                fail(f"{where}: must serve HTTP on 0.0.0.0:{HTTP_PORT}")
            expected_paths = {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
            for kind, probe in probes.items():
                if probe and (probe.get("httpGet", {}).get("path") != expected_paths[kind] or probe["httpGet"].get("port") not in ("http", HTTP_PORT)):
                    fail(f"{where}: {kind} is not an HTTP probe of {expected_paths[kind]} on the HTTP port")
            for svc in SERVICES:
                address = env.get(f"{svc.upper()}_ADDRESS", "")
                target = services.get(svc)
                if not target or address != f"{target['metadata']['name']}:{GRPC_PORTS[svc]}":
                    fail(f"{where}: {svc.upper()}_ADDRESS {address!r} is not the {svc} Service's gRPC port")
        else:
            if ports.get("grpc") != GRPC_PORTS[component] or env.get("GRPC_ADDRESS") != f"0.0.0.0:{GRPC_PORTS[component]}":
                fail(f"{where}: must serve gRPC on 0.0.0.0:{GRPC_PORTS[component]}")
            if "GRPC_TLS_CERT_FILE" in env:
                # Mutual TLS: the kubelet's gRPC probes (plaintext) would be refused; HTTP on the metrics port instead.
                expected_paths = {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
                for kind, probe in probes.items():
                    if probe and (probe.get("httpGet", {}).get("path") != expected_paths[kind] or probe["httpGet"].get("port") not in ("metrics", METRICS_PORTS[component])):
                        fail(f"{where}: {kind} is not an HTTP probe of {expected_paths[kind]} on the metrics port (mutual TLS)")
            else:
                for kind, probe in probes.items():
                    if probe and probe.get("grpc", {}).get("port") != GRPC_PORTS[component]:
                        fail(f"{where}: {kind} is not a native gRPC probe of port {GRPC_PORTS[component]}")
            database_url = env.get("DATABASE_URL")
            if component not in DATABASE_SERVICES:
                if any(v.startswith("DATABASE_") or v.startswith("MIGRAT") for v in env):
                    fail(f"{where}: has no database, but is given database variables")
            elif not isinstance(database_url, dict) or database_url["key"] != f"{component}-database-url":
                fail(f"{where}: DATABASE_URL is not the {component}-database-url key of a Secret")
            elif env.get("MIGRATE_ON_START") != "false":
                fail(f"{where}: MIGRATE_ON_START must be false (the hook Jobs migrate)")
        # The attestation of SCIM actors: the gateway signs, the SCIM service verifies, with the same Secret key.
        if component in ("gateway", "scim"):
            attestation = env.get("ACTOR_ATTESTATION_SECRET")
            if not isinstance(attestation, dict) or attestation["key"] != "actor-attestation-secret":
                fail(f"{where}: ACTOR_ATTESTATION_SECRET is not the actor-attestation-secret key of a Secret")
            attestations[component] = attestation and attestation.get("secret")
        # Mutual TLS on gRPC: the three files from this component's own Secret, mounted read-only, or none of them.
        tls_env = {k: env.get(k) for k in ("GRPC_TLS_CERT_FILE", "GRPC_TLS_KEY_FILE", "GRPC_TLS_CA_FILE")}
        tls_mount = next((m for m in container.get("volumeMounts", []) if m["name"] == "grpc-tls"), None)
        tls_volume = next((v for v in pod.get("volumes", []) if v["name"] == "grpc-tls"), None)
        if any(tls_env.values()):
            base = (tls_mount or {}).get("mountPath", "/nonexistent")
            expected = {"GRPC_TLS_CERT_FILE": f"{base}/tls.crt", "GRPC_TLS_KEY_FILE": f"{base}/tls.key", "GRPC_TLS_CA_FILE": f"{base}/ca.crt"}
            if tls_env != expected or not tls_mount or tls_mount.get("readOnly") is not True:
                fail(f"{where}: GRPC_TLS_* are not the tls.crt, tls.key and ca.crt of a read-only mount")
            secret_name = (tls_volume or {}).get("secret", {}).get("secretName")
            if secret_name != f"{deployment['metadata']['name']}-grpc-tls":
                fail(f"{where}: the gRPC TLS volume is not the Secret {deployment['metadata']['name']}-grpc-tls")
            tls_secrets[component] = secret_name
            # Identities: the prefix of every peer's SPIFFE id, which followed by a component's name is the SPIFFE id
            # of that component's ServiceAccount in this namespace (what its Certificate carries, checked below).
            prefix = env.get("GRPC_TLS_SPIFFE_PREFIX", "")
            namespace = deployment["metadata"].get("namespace", "")
            account_prefix = re.fullmatch(rf"spiffe://[a-z0-9][-a-z0-9._]*/ns/{re.escape(namespace)}/sa/(.*)", prefix)
            if not account_prefix or account_prefix.group(1) + component != pod.get("serviceAccountName"):
                fail(f"{where}: GRPC_TLS_SPIFFE_PREFIX {prefix!r} followed by {component} is not the SPIFFE id of its ServiceAccount in {namespace}")
            spiffe_prefixes[component] = prefix
        elif "GRPC_TLS_SPIFFE_PREFIX" in env:
            fail(f"{where}: GRPC_TLS_SPIFFE_PREFIX without mutual TLS")
        elif tls_mount or tls_volume:
            fail(f"{where}: a grpc-tls volume without GRPC_TLS_* variables")
        # Plaintext only by the explicit switch: GRPC_PLAINTEXT=true exactly when no GRPC_TLS_* is set.
        if ("GRPC_PLAINTEXT" in env) == any(tls_env.values()) or env.get("GRPC_PLAINTEXT", "true") != "true":
            fail(f"{where}: GRPC_PLAINTEXT={env.get('GRPC_PLAINTEXT')!r} with GRPC_TLS_* {'set' if any(tls_env.values()) else 'unset'}: TLS or the explicit plaintext switch, exactly one")
        if component == "scim":
            for svc in ("users", "groups"):
                if env.get(f"{svc.upper()}_ADDRESS") != f"{services[svc]['metadata']['name']}:{GRPC_PORTS[svc]}":
                    fail(f"{where}: {svc.upper()}_ADDRESS is not the {svc} Service")
            if not str(env.get("SCIM_BASE_URL", "")).endswith("/scim/v2"):
                fail(f"{where}: SCIM_BASE_URL does not end in /scim/v2")
        if component in ("users", "drives") and env.get("WEBHOOKS_ADDRESS") != f"{services['webhooks']['metadata']['name']}:{GRPC_PORTS['webhooks']}":
            fail(f"{where}: WEBHOOKS_ADDRESS is not the webhooks Service (the outbox relay would be off)")
        # A report's group must be of the drive's organization: the Drives service asks the Groups service.
        if component == "drives" and env.get("GROUPS_ADDRESS") != f"{services['groups']['metadata']['name']}:{GRPC_PORTS['groups']}":
            fail(f"{where}: GROUPS_ADDRESS is not the groups Service")
        # Organizations: the claim of client-credentials tokens, the clients bound by configuration, the token cache.
        if component == "gateway":
            for variable in ("OIDC_ORGANIZATION_CLAIM", "SCIM_CLIENT_ORGANIZATIONS", "SCIM_TOKEN_CACHE_SECONDS"):
                if variable not in env:
                    fail(f"{where}: no {variable}")
        if component == "webhooks":
            if env.get("WEBHOOKS_MODE") != "production":
                fail(f"{where}: WEBHOOKS_MODE must be production (https targets only)")
            if env.get("GROUPS_ADDRESS") != f"{services['groups']['metadata']['name']}:{GRPC_PORTS['groups']}":
                fail(f"{where}: GROUPS_ADDRESS is not the groups Service")
            if not isinstance(env.get("WEBHOOKS_SECRET_KEY"), dict):
                fail(f"{where}: WEBHOOKS_SECRET_KEY must come from a Secret")

        # Each replica set spreads over the topology keys (its own pods only), when spreading is on.
        for constraint in pod.get("topologySpreadConstraints", []):
            if not selects(constraint.get("labelSelector"), pod_labels) or constraint.get("maxSkew", 0) < 1:
                fail(f"{where}: a topologySpreadConstraint does not select the component's pods")
            for other in COMPONENTS:
                if other != component and selects(constraint.get("labelSelector"), deployments.get(other, {}).get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})):
                    fail(f"{where}: a topologySpreadConstraint also counts {other}'s pods")
        if component != "gateway":
            age, grace = env.get("GRPC_MAX_CONNECTION_AGE_MS"), env.get("GRPC_MAX_CONNECTION_AGE_GRACE_MS")
            if not age or not grace:
                fail(f"{where}: no maximum connection age: callers would never reach replicas added later")

        # Termination: the grace period covers the preStop pause and the drain.
        drain = int(env.get("SHUTDOWN_TIMEOUT_MS", "10000")) / 1000
        sleep = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds")
        if not sleep:
            fail(f"{where}: no preStop sleep")
            sleep = 0
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if grace <= drain + sleep:
            fail(f"{where}: terminationGracePeriodSeconds {grace} <= preStop {sleep} s + drain {drain} s")

        # Service ports point at the container's named ports.
        if service:
            for sp in service["spec"]["ports"]:
                if sp.get("targetPort") not in ports and sp.get("targetPort") not in ports.values():
                    fail(f"{where}: Service port {sp['name']} targets {sp.get('targetPort')}, not a container port")
            # The gRPC services' Services are headless: callers resolve every ready replica and balance over them.
            headless = service["spec"].get("clusterIP") == "None"
            if headless != (component != "gateway"):
                fail(f"{where}: the Service must be {'headless' if component != 'gateway' else 'a ClusterIP'}")
            names = {p["name"] for p in service["spec"]["ports"]}
            if "metrics" not in names or ("http" if component == "gateway" else "grpc") not in names:
                fail(f"{where}: the Service lacks its metrics or serving port")

    for kind, have in (("Service", services), ("ServiceAccount", accounts)):
        extra = sorted(set(have) - set(COMPONENTS))
        if extra:
            fail(f"{kind}s for unknown components {extra}")

    # --- the actor attestation and mutual TLS, across components
    if len(set(attestations.values())) != 1:
        fail(f"the gateway and the SCIM service read ACTOR_ATTESTATION_SECRET from different Secrets: {attestations}")
    if tls_secrets and sorted(tls_secrets) != sorted(COMPONENTS):
        fail(f"mutual TLS is on for {sorted(tls_secrets)} only: all or nothing, every component")
    if len(set(spiffe_prefixes.values())) > 1:
        fail(f"the components map SPIFFE ids to components under different prefixes: {spiffe_prefixes}")
    # --- cert-manager Certificates (a CRD: no Kubernetes schema checks them)
    certificates = by_kind("Certificate")
    if certificates and not tls_secrets:
        fail("Certificates without mutual TLS (grpcTls.enabled)")
    if certificates:
        by_secret = {c["spec"].get("secretName"): c for c in certificates}
        if sorted(by_secret) != sorted(list(tls_secrets.values()) + ([operator_secret] if operator_secret else [])):
            fail(f"Certificates for {sorted(by_secret)}, but the Deployments (and the operator) mount {sorted(tls_secrets.values())}")
        operator_cert = by_secret.get(operator_secret)
        if operator_cert:
            spec = operator_cert["spec"]
            prefix = next(iter(spiffe_prefixes.values()), "")
            if spec.get("uris") != [prefix + OPERATOR] or spec.get("dnsNames") or "client auth" not in spec.get("usages", []) or "server auth" in spec.get("usages", []):
                fail(f"Certificate {operator_secret}: must be a client certificate of the SPIFFE id {prefix + OPERATOR} alone")
            if not spec.get("issuerRef", {}).get("name"):
                fail(f"Certificate {operator_secret}: no issuer")
        for component, secret_name in tls_secrets.items():
            cert = by_secret.get(secret_name)
            if not cert:
                continue
            spec = cert["spec"]
            if cert["apiVersion"] != "cert-manager.io/v1":
                fail(f"Certificate {secret_name}: apiVersion {cert['apiVersion']}")
            service_name = services[component]["metadata"]["name"]
            if service_name not in spec.get("dnsNames", []):
                fail(f"Certificate {secret_name}: does not name the Service {service_name}, which its callers dial")
            if spec.get("uris") != [spiffe_prefixes.get(component, "") + component]:
                fail(f"Certificate {secret_name}: uris {spec.get('uris')} are not the one SPIFFE id of {component} (GRPC_TLS_SPIFFE_PREFIX + {component})")
            if not {"server auth", "client auth"} <= set(spec.get("usages", [])):
                fail(f"Certificate {secret_name}: needs both server auth and client auth")
            if not spec.get("issuerRef", {}).get("name"):
                fail(f"Certificate {secret_name}: no issuer")

    # --- the chart-managed certificates: the issuer hook Job, its RBAC, what it is told to make
    issuer_jobs = [j for j in by_kind("Job") if component_of(j) == ISSUER]
    issuer_ports = set()
    if issuer_jobs and (certificates or not tls_secrets):
        fail("the certificate issuer Job renders with cert-manager Certificates or without mutual TLS")
    for job in issuer_jobs:
        jname = job["metadata"]["name"]
        annotations = job["metadata"].get("annotations", {})
        if annotations.get("helm.sh/hook") != "pre-install,pre-upgrade" or "before-hook-creation" not in annotations.get("helm.sh/hook-delete-policy", ""):
            fail(f"Job {jname}: not a pre-install,pre-upgrade hook replaced at each run")
        weight = int(annotations.get("helm.sh/hook-weight", "0"))
        pod = job["spec"]["template"]["spec"]
        container = pod["containers"][0]
        if "packages/pki/dist/issue-grpc-certificates.js" not in container.get("args", []):
            fail(f"Job {jname}: does not run issue-grpc-certificates.js")
        if container["image"] != deployments.get("gateway", {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image"):
            fail(f"Job {jname}: not the gateway's image (the one that ships packages/pki)")
        sc = container.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False or sc.get("readOnlyRootFilesystem") is not True or sc.get("capabilities", {}).get("drop") != ["ALL"] or pod.get("securityContext", {}).get("runAsNonRoot") is not True:
            fail(f"Job {jname}: securityContext is not restricted")
        if not {"cpu", "memory"} <= set(container.get("resources", {}).get("limits", {})):
            fail(f"Job {jname}: no limits")
        config = json.loads(next((e["value"] for e in container.get("env", []) if e["name"] == "GRPC_ISSUER_CONFIG"), "{}"))
        wanted = {}
        for component, secret_name in tls_secrets.items():
            service = services[component]["metadata"]["name"]
            namespace = services[component]["metadata"].get("namespace")
            wanted[secret_name] = {"component": component, "secret": secret_name, "deployment": deployments[component]["metadata"]["name"],
                                   "spiffeId": spiffe_prefixes.get(component, "") + component,
                                   "dnsNames": [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]}
        if operator_secret:
            wanted[operator_secret] = {"component": OPERATOR, "secret": operator_secret,
                                       "spiffeId": next(iter(spiffe_prefixes.values()), "") + OPERATOR, "dnsNames": []}
        got = {c.get("secret"): c for c in config.get("certificates", [])}
        if got != wanted:
            fail(f"Job {jname}: GRPC_ISSUER_CONFIG certificates {sorted(got)} are not the mounted Secrets with their SPIFFE ids, Services' names and Deployments")
        ca_secret = config.get("caSecret")
        if not ca_secret or ca_secret in secrets or ca_secret in tls_secrets.values():
            fail(f"Job {jname}: the CA Secret {ca_secret!r} must be its own and not rendered by Helm (it would be replaced at each upgrade)")
        for secret_name in tls_secrets.values():
            if secret_name in secrets:
                fail(f"Secret {secret_name}: rendered by Helm although the issuer makes it")
        # Its identity: its own ServiceAccount (hooks made before it), a Role limited to the named objects.
        account = next((a for a in by_kind("ServiceAccount") if a["metadata"]["name"] == pod.get("serviceAccountName")), None)
        role = next((r for r in by_kind("Role") if r["metadata"]["name"] == pod.get("serviceAccountName")), None)
        binding = next((b for b in by_kind("RoleBinding") if b.get("roleRef", {}).get("name") == (role or {}).get("metadata", {}).get("name")), None)
        if not account or not role or not binding or pod.get("automountServiceAccountToken") is not True:
            fail(f"Job {jname}: no ServiceAccount, Role and RoleBinding of its own, or no token mounted")
            continue
        if binding.get("subjects") != [{"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"].get("namespace")}]:
            fail(f"RoleBinding {binding['metadata']['name']}: binds {binding.get('subjects')}, not the issuer's ServiceAccount alone")
        for obj in (account, role, binding):
            a = obj["metadata"].get("annotations", {})
            if a.get("helm.sh/hook") != "pre-install,pre-upgrade" or int(a.get("helm.sh/hook-weight", "0")) >= weight or "before-hook-creation" not in a.get("helm.sh/hook-delete-policy", ""):
                fail(f"{obj['kind']} {obj['metadata']['name']}: not a pre-install,pre-upgrade hook made before the issuer Job")
        expected_rules = [
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [ca_secret] + [w for w in wanted], "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [w["deployment"] for w in wanted.values() if "deployment" in w], "verbs": ["get", "patch"]},
        ]
        normalize = lambda rules: sorted(json.dumps({k: sorted(v) for k, v in r.items()}, sort_keys=True) for r in rules)
        if normalize(role.get("rules", [])) != normalize(expected_rules):
            fail(f"Role {role['metadata']['name']}: rules {role.get('rules')} are not get/update of the named Secrets, create of Secrets, get/patch of the Deployments")
        for other in by_kind("Role") + by_kind("ClusterRole"):
            if other is not role:
                fail(f"{other['kind']} {other['metadata']['name']}: the chart grants nothing but the issuer's Role")
    if tls_secrets and not certificates and not issuer_jobs:
        print(f"{name}: mutual TLS from Secrets made outside the chart (grpcTls.existingSecrets)")

    # --- migration Jobs: hooks, after their Secret
    jobs = [j for j in by_kind("Job") if component_of(j) == "migrate"]
    clusters = by_kind("Cluster")
    if jobs:
        if len(jobs) != len(DATABASE_SERVICES) * len(MIGRATION_PHASES):
            fail(f"{len(jobs)} migration Jobs, expected one per phase per service with a database")
        db_secret_weights = []
        for secret in secrets.values():
            annotations = secret["metadata"].get("annotations", {})
            if any(k.endswith("-database-url") for k in secret.get("stringData", {})):
                if annotations.get("helm.sh/hook") != "pre-install,pre-upgrade":
                    fail(f"Secret {secret['metadata']['name']}: the Jobs need it, but it is not a pre-install,pre-upgrade hook")
                db_secret_weights.append(int(annotations.get("helm.sh/hook-weight", "0")))
        migrated = set()
        owner_secrets = set()
        for job in jobs:
            jname = job["metadata"]["name"]
            annotations = job["metadata"].get("annotations", {})
            phase = next((p for p, (suffix, _) in MIGRATION_PHASES.items() if suffix and jname.endswith(suffix)), "expand")
            suffix, hook = MIGRATION_PHASES[phase]
            if clusters and phase == "expand":
                hook = CNPG_EXPAND_HOOK
            if annotations.get("helm.sh/hook") != hook:
                fail(f"Job {jname}: the {phase} phase is not a {hook} hook")
            phase_env = [e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0].get("env", []) if e["name"] == "MIGRATION_PHASE"]
            if phase_env != [phase]:
                fail(f"Job {jname}: MIGRATION_PHASE is {phase_env}, expected {phase}")
            if "before-hook-creation" not in annotations.get("helm.sh/hook-delete-policy", ""):
                fail(f"Job {jname}: a second upgrade would find the old Job (hook-delete-policy before-hook-creation)")
            weight = int(annotations.get("helm.sh/hook-weight", "0"))
            if any(w >= weight for w in db_secret_weights):
                fail(f"Job {jname}: not weighted after the database Secret it reads")
            pod = job["spec"]["template"]["spec"]
            container = pod["containers"][0]
            if pod.get("restartPolicy") not in ("Never", "OnFailure"):
                fail(f"Job {jname}: restartPolicy")
            if pod.get("automountServiceAccountToken") is not False:
                fail(f"Job {jname}: mounts a service account token")
            sc = container.get("securityContext", {})
            if sc.get("allowPrivilegeEscalation") is not False or sc.get("readOnlyRootFilesystem") is not True or sc.get("capabilities", {}).get("drop") != ["ALL"]:
                fail(f"Job {jname}: container securityContext is not restricted")
            if pod.get("securityContext", {}).get("runAsNonRoot") is not True:
                fail(f"Job {jname}: pod securityContext is not restricted")
            if not {"cpu", "memory"} <= set(container.get("resources", {}).get("limits", {})):
                fail(f"Job {jname}: no limits")
            for init in pod.get("initContainers", []):
                isc = init.get("securityContext", {})
                if isc.get("allowPrivilegeEscalation") is not False or isc.get("readOnlyRootFilesystem") is not True or isc.get("capabilities", {}).get("drop") != ["ALL"] or not {"cpu", "memory"} <= set(init.get("resources", {}).get("limits", {})):
                    fail(f"Job {jname}: init container {init['name']} is not restricted or has no limits")
            if clusters and "wait-for-database" not in [i["name"] for i in pod.get("initContainers", [])]:
                fail(f"Job {jname}: no wait-for-database init container (a new Cluster takes minutes to serve)")
            if "migrate.js" not in " ".join(container.get("command", []) + container.get("args", [])):
                fail(f"Job {jname}: does not run migrate.js")
            refs = [e["valueFrom"]["secretKeyRef"] for e in container.get("env", []) if e["name"] == "DATABASE_URL" and "valueFrom" in e]
            owner_refs = [e["valueFrom"]["secretKeyRef"] for e in container.get("env", []) if e["name"] == "MIGRATION_DATABASE_URL" and "valueFrom" in e]
            svc = next((s for s in DATABASE_SERVICES if jname.endswith(f"-{s}-migrate{suffix}")), None)
            if not refs or not svc or refs[0]["key"] != f"{svc}-database-url":
                fail(f"Job {jname}: DATABASE_URL is not its service's database-url key")
            # The schema owner migrates; its URL is in a Secret of its own, which no Deployment reads.
            if not owner_refs or not svc or owner_refs[0]["key"] != f"{svc}-database-url":
                fail(f"Job {jname}: MIGRATION_DATABASE_URL is not its service's database-url key of the owners' Secret")
            elif refs and owner_refs[0]["name"] == refs[0]["name"]:
                fail(f"Job {jname}: the owner's URL comes from the runtime roles' Secret")
            else:
                owner_secrets.add(owner_refs[0]["name"])
            if svc and container["image"] != deployments.get(svc, {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image"):
                fail(f"Job {jname}: not the image of the {svc} Deployment")
            migrated.add((svc, phase))
        expected_jobs = {(s, p) for s in DATABASE_SERVICES for p in MIGRATION_PHASES}
        if migrated != expected_jobs:
            fail(f"migration Jobs for {sorted(x for x in migrated if x[0])}, expected {sorted(expected_jobs)}")
        for component, env in envs.items():
            for variable, value in env.items():
                if isinstance(value, dict) and value["secret"] in owner_secrets:
                    fail(f"{component}: {variable} reads the schema owners' Secret {value['secret']}: only the migration Jobs may")

    # --- the operator's commands: the erase-due CronJob, and the documented one-off Job that is its pod with other args
    cronjobs = by_kind("CronJob")
    operator_pods = []
    operator_env = {}
    if cronjobs and not operator_account:
        fail("a CronJob without the operator's ServiceAccount (operator.enabled)")
    for cron in cronjobs:
        cname = cron["metadata"]["name"]
        spec = cron["spec"]
        template = spec["jobTemplate"]["spec"]["template"]
        pod = template["spec"]
        container = pod["containers"][0]
        if component_of(cron) != OPERATOR or component_of(template) != OPERATOR:
            fail(f"CronJob {cname}: not labelled as the operator's")
        if spec.get("concurrencyPolicy") != "Forbid" or not spec["jobTemplate"]["spec"].get("activeDeadlineSeconds"):
            fail(f"CronJob {cname}: runs may overlap (concurrencyPolicy Forbid and an activeDeadlineSeconds)")
        if container.get("args") != OPERATOR_SCRIPT + ["erase-due"]:
            fail(f"CronJob {cname}: does not run org.js erase-due, but {container.get('args')}")
        if container["image"] != deployments.get("gateway", {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image"):
            fail(f"CronJob {cname}: not the gateway's image (the one that ships tools/devstack's org.js)")
        sc = container.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False or sc.get("readOnlyRootFilesystem") is not True or sc.get("capabilities", {}).get("drop") != ["ALL"] or pod.get("securityContext", {}).get("runAsNonRoot") is not True:
            fail(f"CronJob {cname}: securityContext is not restricted")
        if not {"cpu", "memory"} <= set(container.get("resources", {}).get("limits", {})):
            fail(f"CronJob {cname}: no limits")
        if pod.get("automountServiceAccountToken") is not False or pod.get("serviceAccountName") != operator_account["metadata"]["name"] or operator_account.get("automountServiceAccountToken") is not False:
            fail(f"CronJob {cname}: not the operator's ServiceAccount without a token")
        operator_env = {e["name"]: e.get("value", {"secret": e.get("valueFrom", {}).get("secretKeyRef", {}).get("name")}) for e in container.get("env", [])}
        for svc in OPERATOR_CALLS:
            address = f"{services[svc]['metadata']['name']}:{GRPC_PORTS[svc]}"
            if operator_env.get(f"{svc.upper()}_ADDRESS") != address:
                fail(f"CronJob {cname}: {svc.upper()}_ADDRESS is not {address}")
        tls_volume = next((v for v in pod.get("volumes", []) if v["name"] == "grpc-tls"), None)
        if tls_secrets:
            prefix = next(iter(spiffe_prefixes.values()), "")
            if (tls_volume or {}).get("secret", {}).get("secretName") != operator_secret or operator_env.get("GRPC_TLS_SPIFFE_PREFIX") != prefix:
                fail(f"CronJob {cname}: not the operator's certificate {operator_secret} with the components' SPIFFE prefix")
            if prefix + OPERATOR != prefix.rsplit("/sa/", 1)[0] + "/sa/" + operator_account["metadata"]["name"]:
                fail(f"CronJob {cname}: the operator's SPIFFE id is not its ServiceAccount's")
        elif operator_env.get("GRPC_PLAINTEXT") != "true" or tls_volume:
            fail(f"CronJob {cname}: GRPC_PLAINTEXT=true exactly when the components run the hop in plaintext")
        if ("REDIS_URL" in operator_env) != ("REDIS_URL" in envs.get("gateway", {})):
            fail(f"CronJob {cname}: REDIS_URL is not the gateways' (an offboarding announces on it)")
        operator_pods.append((OPERATOR, template["metadata"]["labels"], pod))

        example = yaml.safe_load(open(OPERATOR_EXAMPLE))
        example_template = example["spec"]["template"]
        release_ns = (cron["metadata"].get("labels", {}).get("app.kubernetes.io/instance"), cron["metadata"].get("namespace"))
        if release_ns == ("mileage", "mileage") and tls_secrets and "REDIS_URL" in operator_env:
            def comparable(p):
                p = json.loads(json.dumps(p))
                for key in ("imagePullSecrets", "nodeSelector", "tolerations"):
                    p.pop(key, None)
                for c in p["containers"]:
                    c.pop("image", None)
                    c["args"] = c.get("args", [])[:len(OPERATOR_SCRIPT)]
                return p
            if comparable(example_template["spec"]) != comparable(pod):
                fail(f"{OPERATOR_EXAMPLE.name}: its pod is not the CronJob {cname}'s but for the image and args")
            if example_template["spec"]["containers"][0]["args"][:len(OPERATOR_SCRIPT)] != OPERATOR_SCRIPT:
                fail(f"{OPERATOR_EXAMPLE.name}: does not run org.js")
            example_pod = (OPERATOR_EXAMPLE.name, example_template["metadata"]["labels"])
            for policy in by_kind("NetworkPolicy"):
                if selects(policy["spec"]["podSelector"], template["metadata"]["labels"]) != selects(policy["spec"]["podSelector"], example_pod[1]):
                    fail(f"{OPERATOR_EXAMPLE.name}: NetworkPolicy {policy['metadata']['name']} treats its pod otherwise than the CronJob's")
            print(f"{name}: {OPERATOR_EXAMPLE.name} is the CronJob {cname}'s pod but for its args, under the same NetworkPolicies")

    # --- NetworkPolicies
    policies = by_kind("NetworkPolicy")
    pods = [(component_of(d), d["spec"]["template"]["metadata"]["labels"], d["spec"]["template"]["spec"]) for d in by_kind("Deployment")]
    pods += [(j["metadata"]["name"], j["spec"]["template"]["metadata"]["labels"], j["spec"]["template"]["spec"]) for j in jobs + issuer_jobs]
    pods += operator_pods
    if not policies:
        fail("no NetworkPolicies")
    else:
        deny = [p for p in policies if sorted(p["spec"].get("policyTypes", [])) == ["Egress", "Ingress"]
                and not p["spec"].get("ingress") and not p["spec"].get("egress")]
        if not deny:
            fail("no default-deny NetworkPolicy (both policy types, no rules)")
        for who, labels, _ in pods:
            selecting = [p for p in policies if selects(p["spec"]["podSelector"], labels)]
            if not selecting:
                fail(f"{who}: selected by no NetworkPolicy")
            if not any(p in deny for p in selecting):
                fail(f"{who}: not selected by the default-deny policy")
            dns = [r for p in selecting if "Egress" in p["spec"]["policyTypes"] for r in p["spec"].get("egress", [])
                   if port_matches(r.get("ports"), {"number": 53}, "UDP")]
            if not dns:
                fail(f"{who}: may not resolve names (no UDP 53 egress)")

        def pod_ports(spec):
            return [{"name": p.get("name"), "number": p["containerPort"]} for c in spec["containers"] for p in c.get("ports", [])]

        def allows(direction, subject_labels, peer_labels, port):
            """Some policy selecting the subject allows this connection in this direction, from/to a pod of the
            release (podSelector peers; namespaceSelector and ipBlock peers are taken as outside the release)."""
            key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
            for policy in policies:
                if direction not in policy["spec"].get("policyTypes", []) or not selects(policy["spec"]["podSelector"], subject_labels):
                    continue
                for rule in policy["spec"].get(key, []) or []:
                    if not port_matches(rule.get("ports"), port):
                        continue
                    peers = rule.get(peers_key)
                    if not peers:
                        return True
                    for peer in peers:
                        if "ipBlock" in peer or "namespaceSelector" in peer:
                            continue
                        if "podSelector" in peer and selects(peer["podSelector"], peer_labels):
                            return True
            return False

        # Pod to pod inside the release: exactly the expected calls.
        deployment_pods = [(c, l, s) for c, l, s in pods if c in COMPONENTS]
        for src, src_labels, _ in pods:
            for dst, dst_labels, dst_spec in deployment_pods:
                for port in pod_ports(dst_spec):
                    ok = allows("Egress", src_labels, dst_labels, port) and allows("Ingress", dst_labels, src_labels, port)
                    expected = (src, dst) in ALLOWED_CALLS and port["number"] == GRPC_PORTS.get(dst)
                    if ok != expected:
                        fail(f"NetworkPolicy: {src} -> {dst}:{port['number']} is {'allowed' if ok else 'denied'}, expected {'allowed' if expected else 'denied'}")

        # From outside the release: the ingress controller to the gateway's HTTP port, Prometheus to metrics ports.
        def outside_peers(labels, port):
            found = []
            for policy in policies:
                if "Ingress" not in policy["spec"].get("policyTypes", []) or not selects(policy["spec"]["podSelector"], labels):
                    continue
                for rule in policy["spec"].get("ingress", []) or []:
                    if port_matches(rule.get("ports"), port):
                        for peer in rule.get("from") or [{"anything": True}]:
                            if "namespaceSelector" in peer or "ipBlock" in peer or "anything" in peer:
                                found.append(peer)
            return found

        for who, labels, spec in pods:
            for port in pod_ports(spec):
                peers = outside_peers(labels, port)
                if who == "gateway" and port["number"] == HTTP_PORT:
                    if len(peers) != 1 or "ipBlock" in peers[0] or "anything" in peers[0]:
                        fail(f"NetworkPolicy: the gateway's HTTP port must admit the ingress controller's selector only, got {peers}")
                elif port["name"] == "metrics":
                    if len(peers) != 1 or "ipBlock" in peers[0] or "anything" in peers[0]:
                        fail(f"NetworkPolicy: {who}'s metrics port must admit Prometheus's selector only, got {peers}")
                elif peers:
                    fail(f"NetworkPolicy: {who}:{port['number']} admits traffic from outside the release: {peers}")
            for policy in policies:
                if selects(policy["spec"]["podSelector"], labels):
                    for rule in policy["spec"].get("ingress", []) or []:
                        if not rule.get("from"):
                            fail(f"NetworkPolicy {policy['metadata']['name']}: an ingress rule without from admits everyone")

        # Egress out of the release (ipBlock, or a namespaceSelector): PostgreSQL for the services and the Jobs, Redis
        # and Keycloak for the gateway, the collector when tracing is on, DNS; nothing else, and never the whole world.
        def ip_egress(labels):
            out = set()
            for policy in policies:
                if "Egress" in policy["spec"].get("policyTypes", []) and selects(policy["spec"]["podSelector"], labels):
                    for rule in policy["spec"].get("egress", []) or []:
                        dns_only = bool(rule.get("ports")) and all(p.get("port") == 53 for p in rule["ports"])
                        if not rule.get("to"):
                            if not dns_only:
                                fail(f"NetworkPolicy {policy['metadata']['name']}: an egress rule without to allows everything")
                            continue
                        for peer in rule["to"]:
                            if "ipBlock" in peer:
                                network = ipaddress.ip_network(peer["ipBlock"]["cidr"], strict=False)
                                excepted = [ipaddress.ip_network(c, strict=False) for c in peer["ipBlock"].get("except", [])]
                                internet = (labels.get("app.kubernetes.io/component") == "webhooks"
                                            and all(p.get("port") == 443 for p in rule.get("ports") or [{"port": "any"}])
                                            and all(any(ipaddress.ip_network(n).subnet_of(e) for e in excepted
                                                        if e.version == network.version)
                                                    for n in NON_PUBLIC[network.version]))
                                if network.prefixlen == 0 and not internet:
                                    fail(f"NetworkPolicy {policy['metadata']['name']}: egress to {network}, the whole world")
                            if dns_only:
                                continue
                            cnpg_pods = "cnpg.io/cluster" in ((peer.get("podSelector") or {}).get("matchLabels") or {})
                            if "ipBlock" in peer or "namespaceSelector" in peer or cnpg_pods:
                                for p in rule.get("ports") or [{"port": "any"}]:
                                    out.add(p.get("port"))
            return out

        for who, labels, _ in pods:
            env = operator_env if who == OPERATOR else envs.get(who, {})
            got = ip_egress(labels)
            expected = set()
            if who == "gateway":
                expected.add("oidc")
                if "REDIS_URL" in env:
                    expected.add("redis")
            elif who not in ("scim", OPERATOR):
                expected.add("postgres")
            if who == OPERATOR and "REDIS_URL" in env:
                expected.add("redis")
            if who == "webhooks":
                expected.add("deliveries (443)")
            if "EXPORT_S3_BUCKET" in env:
                expected.add("export archives' object store")
            if "OTEL_EXPORTER_OTLP_ENDPOINT" in env:
                expected.add("otlp")
            if labels.get("app.kubernetes.io/component") == ISSUER:
                # The API server only, on the ports of grpcTls.chartManaged.apiServer (the Service's and its endpoints').
                expected = {f"api server ({p})" for p in got}
                if not got:
                    fail(f"NetworkPolicy: {who} may not reach the API server")
            if "any" in got:
                fail(f"NetworkPolicy: {who} may reach addresses on any port")
            if len(got) != len(expected):
                fail(f"NetworkPolicy: {who} may reach address ports {sorted(map(str, got))}, expected {len(expected)} ({', '.join(sorted(expected))})")

    # --- Ingress
    for ingress in by_kind("Ingress"):
        gateway_service = services.get("gateway", {}).get("metadata", {}).get("name")
        paths = {p["path"]: p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}
        for needed in ("/v1", "/scim/v2", "/openapi.json", "/docs"):
            p = paths.get(needed)
            if not p or p["backend"]["service"]["name"] != gateway_service or p["backend"]["service"]["port"].get("name") != "http":
                fail(f"Ingress: {needed} is not carried to the gateway's http port")
        if set(paths) - {"/v1", "/scim/v2", "/openapi.json", "/docs"}:
            fail(f"Ingress: unexpected paths {sorted(set(paths) - {'/v1', '/scim/v2', '/openapi.json', '/docs'})}")
        for tls in ingress["spec"].get("tls", []):
            hosts = {r.get("host") for r in ingress["spec"]["rules"]}
            if not tls.get("secretName") or not set(tls.get("hosts", [])) >= hosts:
                fail("Ingress: TLS without a secret or not covering the host")
    if len(by_kind("Ingress")) > 1:
        fail("more than one Ingress")

    # --- ServiceMonitor, PrometheusRule (CRDs: no Kubernetes schema checks them)
    monitors, rules = by_kind("ServiceMonitor"), by_kind("PrometheusRule")
    if bool(monitors) != bool(rules):
        fail("ServiceMonitor and PrometheusRule come together (metrics.serviceMonitor.enabled)")
    for monitor in monitors:
        if monitor["apiVersion"] != "monitoring.coreos.com/v1":
            fail("ServiceMonitor: apiVersion")
        selected = [c for c, s in services.items() if selects(monitor["spec"]["selector"], s["metadata"]["labels"])]
        if sorted(selected) != sorted(COMPONENTS):
            fail(f"ServiceMonitor selects the Services of {sorted(selected)}, expected every component")
        endpoint_ports = {e.get("port") for e in monitor["spec"]["endpoints"]}
        if endpoint_ports != {"metrics"} or any(e.get("path", "/metrics") != "/metrics" for e in monitor["spec"]["endpoints"]):
            fail("ServiceMonitor: must scrape the Services' metrics port at /metrics")
        for e in monitor["spec"]["endpoints"]:
            if "interval" in e and not re.fullmatch(r"[0-9]+(ms|s|m|h)", str(e["interval"])):
                fail(f"ServiceMonitor: interval {e['interval']}")
    alerts = {}
    for rule_doc in rules:
        if rule_doc["apiVersion"] != "monitoring.coreos.com/v1":
            fail("PrometheusRule: apiVersion")
        for group in rule_doc["spec"]["groups"]:
            if not group.get("name") or not group.get("rules"):
                fail("PrometheusRule: a group without name or rules")
            for rule in group["rules"]:
                alert = rule.get("alert")
                if not alert or not rule.get("expr") or set(rule) - {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}:
                    fail(f"PrometheusRule: malformed rule {rule}")
                    continue
                if rule.get("labels", {}).get("severity") not in ("critical", "warning", "info"):
                    fail(f"{alert}: severity label")
                if not rule.get("annotations", {}).get("summary"):
                    fail(f"{alert}: no summary")
                if "for" in rule and not re.fullmatch(r"[0-9]+(s|m|h)", str(rule["for"])):
                    fail(f"{alert}: for {rule['for']}")
                nodes = check_promql(alert, rule["expr"], catalogue)
                alerts.setdefault(alert, []).append((rule["expr"], nodes))
    if rules:
        def aggregates_by(nodes, label):
            return any(isinstance(n, promql_parser.AggregateExpr) and n.modifier is not None and label in n.modifier.labels for n in nodes)

        def uses(nodes, metric):
            return any(isinstance(n, promql_parser.VectorSelector) and n.name == metric for n in nodes)

        def quantile(nodes):
            return any(isinstance(n, promql_parser.Call) and "histogram_quantile" in n.prettify() for n in nodes)

        needs = {
            "MileageRouteErrors": lambda e, n: uses(n, "http_server_request_duration_seconds_count") and aggregates_by(n, "route") and '5..' in e,
            "MileageRouteSlow": lambda e, n: uses(n, "http_server_request_duration_seconds_bucket") and aggregates_by(n, "route") and quantile(n) and "0.99" in e,
            "MileageGrpcErrors": lambda e, n: uses(n, "grpc_server_handled_total") and aggregates_by(n, "grpc_method"),
            "MileageGrpcSlow": lambda e, n: uses(n, "grpc_server_handling_seconds_bucket") and aggregates_by(n, "grpc_method") and quantile(n),
        }
        for alert, exprs in alerts.items():
            if alert in ("MileageRouteErrors", "MileageGrpcErrors"):
                for e, _ in exprs:
                    if not re.search(r"\band\b", e) or ">=" not in e:
                        fail(f"{alert}: no minimum-traffic guard (... and rate >= minRequestsPerSecond)")
        for rule_doc in rules:
            for group in rule_doc["spec"]["groups"]:
                for rule in group["rules"]:
                    if rule.get("alert") and not rule.get("for"):
                        fail(f"{rule['alert']}: no for: one bad scrape would page")
        if not any(uses(n, "dependency_up") for _, n in alerts.get("MileageDependencyDown", [])):
            fail("PrometheusRule: MileageDependencyDown (on dependency_up) missing")
        for alert, test in needs.items():
            if not any(test(e, n) for e, n in alerts.get(alert, [])):
                fail(f"PrometheusRule: {alert} missing or not per route / method as required")
        down = {e for e, _ in alerts.get("MileageComponentDown", [])}
        for c in COMPONENTS:
            if not any(f'-{c}"' in e for e in down):
                fail(f"PrometheusRule: no MileageComponentDown for {c}")

    # --- PostgreSQL on CloudNativePG (CRDs: the real API server checks their schemas, deploy/kube)
    check_cloudnativepg(by_kind, secrets, deployments, jobs, alerts if rules else None)

    # --- Grafana dashboard
    for cm in by_kind("ConfigMap"):
        if cm["metadata"].get("labels", {}).get("grafana_dashboard") != "1":
            continue
        for key, text in cm["data"].items():
            dashboard = json.loads(text)
            targets = [(p.get("title", "?"), t["expr"]) for p in dashboard.get("panels", []) for t in p.get("targets", []) if "expr" in t]
            parsed = []
            for title, expr in targets:
                concrete = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$namespace", "mileage").replace("$release", "mileage")
                parsed.append((title, expr, check_promql(f"dashboard {key}: {title}", concrete, catalogue)))
            for what, test in {
                "HTTP rate per route": lambda e, n: uses(n, "http_server_request_duration_seconds_count") and aggregates_by(n, "route") and "5.." not in e,
                "HTTP errors per route": lambda e, n: aggregates_by(n, "route") and "5.." in e,
                "HTTP duration per route": lambda e, n: uses(n, "http_server_request_duration_seconds_bucket") and aggregates_by(n, "route") and quantile(n),
                "gRPC rate per method": lambda e, n: uses(n, "grpc_server_handled_total") and aggregates_by(n, "grpc_method"),
                "gRPC errors": lambda e, n: uses(n, "grpc_server_handled_total") and "grpc_code" in e,
                "gRPC duration per method": lambda e, n: uses(n, "grpc_server_handling_seconds_bucket") and aggregates_by(n, "grpc_method") and quantile(n),
            }.items():
                if not any(test(e, n) for _, e, n in parsed):
                    fail(f"dashboard {key}: no panel for {what}")

    json.dump(envs, open(env_out, "w"), indent=1)
    if problems:
        print("\n".join(f"{name}: {p}" for p in problems))
        sys.exit(1)
    kinds = sorted({d["kind"] for d in docs})
    print(f"{name}: {len(docs)} manifests ({', '.join(kinds)}): all assertions hold")


def check_cloudnativepg(by_kind, secrets, deployments, jobs, alerts):
    """The Cluster, its roles and their Secrets against the URLs the services and the migration Jobs connect with,
    its WAL archiver and backups through the Barman Cloud plugin, the CA mounted where the URLs say, the alerts."""
    clusters, stores, schedules = by_kind("Cluster"), by_kind("ObjectStore"), by_kind("ScheduledBackup")
    if not clusters:
        if stores or schedules or by_kind("PodMonitor"):
            fail("an ObjectStore, ScheduledBackup or PodMonitor without a Cluster")
        return
    if len(clusters) != 1 or len(stores) != 1 or len(schedules) != 1:
        fail(f"{len(clusters)} Clusters, {len(stores)} ObjectStores, {len(schedules)} ScheduledBackups: expected one each")
        return
    cluster, store, schedule = clusters[0], stores[0], schedules[0]
    name, spec = cluster["metadata"]["name"], cluster["spec"]
    namespace = cluster["metadata"].get("namespace")
    for obj in (cluster, store):
        if obj["metadata"].get("annotations", {}).get("helm.sh/resource-policy") != "keep":
            fail(f"{obj['kind']} {obj['metadata']['name']}: not kept on uninstall (helm.sh/resource-policy: keep)")
    if spec.get("instances", 1) < 2:
        fail(f"Cluster {name}: {spec.get('instances', 1)} instance(s); a failover needs at least 2")
    if "barmanObjectStore" in (spec.get("backup") or {}):
        fail(f"Cluster {name}: the deprecated built-in barmanObjectStore; the Barman Cloud plugin archives")
    archivers = [p for p in spec.get("plugins", []) if p.get("isWALArchiver")]
    if len(archivers) != 1 or archivers[0]["name"] != BARMAN_CLOUD_PLUGIN or archivers[0].get("parameters", {}).get("barmanObjectName") != store["metadata"]["name"]:
        fail(f"Cluster {name}: the WAL archiver is not the Barman Cloud plugin on ObjectStore {store['metadata']['name']}")
    if spec.get("enableSuperuserAccess"):
        fail(f"Cluster {name}: superuser access over the network")
    if not any(line.startswith("hostnossl all all") and line.endswith("reject") for line in spec.get("postgresql", {}).get("pg_hba", [])):
        fail(f"Cluster {name}: connections without TLS are not refused (pg_hba hostnossl ... reject)")
    bootstrap = spec.get("bootstrap", {})
    if "recovery" in bootstrap:
        source = next((c for c in spec.get("externalClusters", []) if c["name"] == bootstrap["recovery"].get("source")), None)
        plugin = (source or {}).get("plugin", {})
        if plugin.get("name") != BARMAN_CLOUD_PLUGIN or plugin.get("parameters", {}).get("barmanObjectName") != store["metadata"]["name"] or plugin.get("parameters", {}).get("serverName") in (None, name):
            fail(f"Cluster {name}: the recovery source is not another Cluster's backups in ObjectStore {store['metadata']['name']}")
    sched = schedule["spec"]
    if sched.get("method") != "plugin" or sched.get("pluginConfiguration", {}).get("name") != BARMAN_CLOUD_PLUGIN or sched.get("cluster", {}).get("name") != name:
        fail(f"ScheduledBackup {schedule['metadata']['name']}: not a plugin backup of Cluster {name}")
    if len(sched.get("schedule", "").split()) != 6:
        fail(f"ScheduledBackup {schedule['metadata']['name']}: the schedule is not six cron fields")
    for monitor in by_kind("PodMonitor"):
        if monitor["spec"].get("selector", {}).get("matchLabels") != {"cnpg.io/cluster": name} or [e.get("port") for e in monitor["spec"].get("podMetricsEndpoints", [])] != ["metrics"]:
            fail(f"PodMonitor {monitor['metadata']['name']}: does not scrape the metrics port of Cluster {name}'s pods")
    if alerts is not None:
        if not by_kind("PodMonitor"):
            fail("the database alerts read metrics no PodMonitor scrapes")
        for alert, metric in (("MileagePostgresWalArchivingFailing", "cnpg_pg_stat_archiver_last_failed_time"),
                              ("MileagePostgresBackupTooOld", "barman_cloud_cloudnative_pg_io_last_available_backup_timestamp")):
            if not any(metric in e and f'pod=~"{name}-[0-9]+"' in e for e, _ in alerts.get(alert, [])):
                fail(f"PrometheusRule: {alert} (on {metric} of Cluster {name}'s pods) missing")

    # Every URL the chart writes is a role of the Cluster, at its -rw Service, TLS verified with the mounted CA, and
    # the role's Secret (the operator's source of its password) holds the same name and password.
    roles = {r["name"]: r for r in spec.get("managed", {}).get("roles", [])}
    urls = [(s["metadata"]["name"], k, v) for s in secrets.values() for k, v in (s.get("stringData") or {}).items() if k.endswith("-database-url")]
    if len(urls) != (2 if jobs else 1) * len(DATABASE_SERVICES):
        fail(f"{len(urls)} database URLs, expected a runtime URL per service with a database (and an owner's, with migrations)")
    ca_dirs = set()
    for secret_name, key, url in urls:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        if parts.hostname != f"{name}-rw.{namespace}.svc" or parts.port != 5432:
            fail(f"Secret {secret_name}/{key}: connects to {parts.hostname}:{parts.port}, not Cluster {name}'s -rw Service")
        if query.get("sslmode") != ["verify-full"] or not query.get("sslrootcert"):
            fail(f"Secret {secret_name}/{key}: TLS not verified against the Cluster's CA (sslmode=verify-full, sslrootcert)")
        else:
            ca_dirs.add(os.path.dirname(query["sslrootcert"][0]))
        role = roles.get(user)
        if not role or role.get("ensure", "present") != "present" or not role.get("login"):
            fail(f"Secret {secret_name}/{key}: {user} is not a managed role of Cluster {name} that logs in")
            continue
        role_secret = secrets.get(role.get("passwordSecret", {}).get("name"))
        if not role_secret or role_secret.get("type") != "kubernetes.io/basic-auth" or role_secret["stringData"].get("username") != user or role_secret["stringData"].get("password") != password:
            fail(f"role {user}: its passwordSecret is not a basic-auth Secret with the name and password of {secret_name}/{key}")
        if role.get("superuser") or role.get("createrole") or role.get("createdb") or role.get("bypassrls") or role.get("replication"):
            fail(f"role {user}: more privileges than logging in")
    runtime_users = {unquote(urlsplit(v).username or "") for n, k, v in urls
                     if any(e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == n for d in deployments.values() for e in d["spec"]["template"]["spec"]["containers"][0].get("env", []))}
    for user in runtime_users:
        if roles.get(user, {}).get("inherit") is not False:
            fail(f"role {user}: a runtime role must not inherit (NOINHERIT), as the owners' roles are not its")
    if len(ca_dirs) != 1:
        fail(f"the database URLs read the CA from {sorted(ca_dirs)}, expected one place")
    ca_dir = next(iter(ca_dirs), None)
    for who, pod in [(c, d["spec"]["template"]["spec"]) for c, d in deployments.items() if c in DATABASE_SERVICES] + [(j["metadata"]["name"], j["spec"]["template"]["spec"]) for j in jobs]:
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        mounts = [m for m in pod["containers"][0].get("volumeMounts", []) if m["mountPath"] == ca_dir]
        source = volumes.get(mounts[0]["name"], {}).get("secret", {}) if mounts else {}
        if not mounts or mounts[0].get("readOnly") is not True or source.get("secretName") != f"{name}-ca" or [i["key"] for i in source.get("items", [])] != ["ca.crt"]:
            fail(f"{who}: the Cluster's CA ({name}-ca, ca.crt alone) is not mounted read-only at {ca_dir}")


# ----------------------------------------------------------------------------------------------- values doc


def check_values_doc(path):
    lines = open(path).read().splitlines()
    stack = []  # (indent, key)
    for number, line in enumerate(lines, 1):
        match = re.match(r"^( *)([A-Za-z0-9_.-]+):", line)
        if not match:
            continue
        indent, key = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        keys = [k for _, k in stack] + [key]
        stack.append((indent, key))
        shared = len(keys) >= 3 and keys[0] == "components" and keys[1] != "gateway"
        previous = lines[number - 2].strip() if number > 1 else ""
        if not shared and not previous.startswith("#"):
            fail(f"{path}:{number}: {'.'.join(keys)} has no comment above it")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"values.yaml: every key documented ({sum(1 for l in lines if re.match(r'^ *[A-Za-z0-9_.-]+:', l))} keys)")


if __name__ == "__main__":
    if sys.argv[1] == "manifests":
        check_manifests(*sys.argv[2:6])
    elif sys.argv[1] == "values-doc":
        check_values_doc(sys.argv[2])
    else:
        raise SystemExit(__doc__)
