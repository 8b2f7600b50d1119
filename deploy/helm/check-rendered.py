#!/usr/bin/env python3
"""Assertions on a rendered chart (helm template output) beyond what the Kubernetes schemas check.
Usage: check-rendered.py <rendered.yaml> <values-set-name>"""
import sys
import yaml

path, name = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
problems = []
components = ["gateway", "users", "groups", "drives", "scim"]


def fail(message):
    problems.append(f"{name}: {message}")


def by_kind(kind):
    return [d for d in docs if d["kind"] == kind]


def component_of(doc):
    return doc["metadata"].get("labels", {}).get("app.kubernetes.io/component")


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


deployments = {component_of(d): d for d in by_kind("Deployment")}
if sorted(deployments) != sorted(components):
    fail(f"Deployments for {sorted(deployments)}, expected {components}")

for component, deployment in deployments.items():
    pod = deployment["spec"]["template"]["spec"]
    psc = pod.get("securityContext", {})
    if not psc.get("runAsNonRoot") or psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        fail(f"{component}: pod securityContext is not restricted")
    if pod.get("automountServiceAccountToken") is not False:
        fail(f"{component}: the service account token is mounted")
    env_of = {}
    for container in pod["containers"]:
        sc = container.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False or not sc.get("readOnlyRootFilesystem") or sc.get("capabilities", {}).get("drop") != ["ALL"] or not sc.get("runAsNonRoot"):
            fail(f"{component}: container {container['name']} security context is not restricted")
        resources = container.get("resources", {})
        for part in ("requests", "limits"):
            if not {"cpu", "memory"} <= set(resources.get(part, {})):
                fail(f"{component}: {part} lack cpu or memory")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            p = container.get(probe)
            if not p:
                fail(f"{component}: no {probe}")
            elif component == "gateway" and "httpGet" not in p:
                fail(f"{component}: {probe} is not an HTTP probe")
            elif component != "gateway" and "grpc" not in p:
                fail(f"{component}: {probe} is not a native gRPC probe")
        if ":latest" in container["image"] or container["image"].endswith(":"):
            fail(f"{component}: image {container['image']} is not pinned")
        env_of = {e["name"]: e for e in container.get("env", [])}
        for e in container.get("env", []):
            if any(word in e["name"] for word in ("SECRET", "PASSWORD", "DATABASE_URL", "REDIS_URL")) and "value" in e:
                fail(f"{component}: {e['name']} is a literal, not a secret reference")
        sleep = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
        drain = int(env_of["SHUTDOWN_TIMEOUT_MS"]["value"]) / 1000
        if pod.get("terminationGracePeriodSeconds", 30) <= drain + sleep:
            fail(f"{component}: terminationGracePeriodSeconds {pod.get('terminationGracePeriodSeconds')} does not cover the drain ({drain} s) and preStop ({sleep} s)")

for kind in ("Service", "ServiceAccount", "PodDisruptionBudget"):
    have = sorted(component_of(d) for d in by_kind(kind))
    if have != sorted(components):
        fail(f"{kind} for {have}, expected every component")
hpas = {d["spec"]["scaleTargetRef"]["name"] for d in by_kind("HorizontalPodAutoscaler")}
for component, deployment in deployments.items():
    if deployment["metadata"]["name"] not in hpas and "replicas" not in deployment["spec"]:
        fail(f"{component}: neither an HPA nor fixed replicas")

policies = by_kind("NetworkPolicy")
pods = [(component_of(d) or d["metadata"]["name"], d["spec"]["template"]["metadata"]["labels"]) for d in by_kind("Deployment") + by_kind("Job")]
if policies:
    deny = [p for p in policies if p["spec"].get("policyTypes") == ["Ingress", "Egress"] and not p["spec"].get("ingress") and not p["spec"].get("egress")]
    if not deny:
        fail("no default-deny NetworkPolicy")
    for who, labels in pods:
        selecting = [p for p in policies if labels_match(p["spec"]["podSelector"], labels)]
        if not any(p in deny for p in selecting):
            fail(f"{who}: not selected by the default-deny policy")
        if not any(p not in deny and p["spec"].get("egress") for p in selecting):
            fail(f"{who}: no policy allows its egress")
    for component in components[1:]:
        own = [p for p in policies if component_of(p) == component]
        sources = [peer for p in own for rule in p["spec"].get("ingress", []) for peer in rule.get("from", []) if "podSelector" in peer and "namespaceSelector" not in peer]
        allowed = sorted(s["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for s in sources)
        expected = ["gateway", "scim"] if component in ("users", "groups") else ["gateway"]
        if allowed != expected:
            fail(f"{component}: reachable from {allowed}, expected {expected}")

jobs = by_kind("Job")
for job in jobs:
    annotations = job["metadata"].get("annotations", {})
    if annotations.get("helm.sh/hook") != "pre-install,pre-upgrade":
        fail(f"{job['metadata']['name']}: not a pre-install/pre-upgrade hook")
for secret in by_kind("Secret"):
    annotations = secret["metadata"].get("annotations", {})
    if "database" in secret["metadata"]["name"] and jobs:
        if int(annotations.get("helm.sh/hook-weight", "0")) >= min(int(j["metadata"]["annotations"]["helm.sh/hook-weight"]) for j in jobs):
            fail("the database Secret is not created before the migration Jobs")

ingresses = by_kind("Ingress")
for ingress in ingresses:
    paths = {p["path"]: p["backend"]["service"]["name"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}
    for needed in ("/v1", "/scim/v2"):
        if not paths.get(needed, "").endswith("-gateway"):
            fail(f"ingress does not carry {needed} to the gateway")

monitors = by_kind("ServiceMonitor")
rules = by_kind("PrometheusRule")
if monitors or rules:
    if not (monitors and rules):
        fail("ServiceMonitor and PrometheusRule come together")
    alerts = [rule["alert"] for pr in rules for g in pr["spec"]["groups"] for rule in g["rules"]]
    for needed in ("MileageRouteErrors", "MileageRouteSlow"):
        if needed not in alerts:
            fail(f"alert {needed} missing")
    if not any("route" in rule["expr"] for pr in rules for g in pr["spec"]["groups"] for rule in g["rules"] if rule["alert"] == "MileageRouteSlow"):
        fail("the latency alert is not per route")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"{name}: {len(docs)} manifests; deployments, probes, resources, security contexts, network policies, hooks and monitoring as required")
