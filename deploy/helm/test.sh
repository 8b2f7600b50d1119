#!/usr/bin/env bash
# Chart tests (CI): Helm built from the Go module proxy, `helm lint --strict` and `helm template` for every value set
# in mileage/ci/, the rendered manifests validated against the Kubernetes API schemas (PyPI kubernetes-validate, which
# bundles them), the assertions of check-rendered.py, and a bad value set refused by values.schema.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
chart="$here/mileage"
HELM_VERSION=v3.19.2
KUBE_VERSION=1.34.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools"
bin="$cache/helm-$HELM_VERSION"
venv="$cache/chart-venv"
started=$SECONDS

if [ ! -x "$bin/helm" ]; then
  echo "building Helm $HELM_VERSION from the Go module proxy" >&2
  GOBIN="$bin" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
helm="$bin/helm"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0 pyyaml==6.0.3
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for values in "$chart"/ci/*.yaml; do
  name="$(basename "$values" .yaml)"
  "$helm" lint --strict "$chart" -f "$values" --kube-version "$KUBE_VERSION" >"$out/$name.lint" || { cat "$out/$name.lint"; exit 1; }
  "$helm" template mileage "$chart" -f "$values" --namespace mileage --kube-version "$KUBE_VERSION" >"$out/$name.yaml"
  # CRDs (ServiceMonitor, PrometheusRule) have no schema there; check-rendered.py asserts on them.
  "$venv/bin/kubernetes-validate" -k "$KUBE_VERSION" --strict --quiet "$out/$name.yaml" 2>&1 | { grep -v "^WARN .*Couldn't find schema for kind \(ServiceMonitor\|PrometheusRule\)" || true; } >"$out/$name.validate"
  if [ -s "$out/$name.validate" ]; then cat "$out/$name.validate"; exit 1; fi
  "$venv/bin/python" "$here/check-rendered.py" "$out/$name.yaml" "$name"
done

# values.schema.json refuses what is wrong.
printf 'gateway:\n  cursorSecret: too-short\ncomponents:\n  gateway:\n    replicas: 0\nnoSuchKey: 1\n' >"$out/bad.yaml"
if "$helm" template mileage "$chart" -f "$chart/ci/minimal.yaml" -f "$out/bad.yaml" --kube-version "$KUBE_VERSION" >/dev/null 2>"$out/bad.err"; then
  echo "a bad value set was accepted" >&2
  exit 1
fi
grep -q "noSuchKey" "$out/bad.err" && grep -q "cursorSecret" "$out/bad.err" || { cat "$out/bad.err"; exit 1; }
echo "chart tests passed for $(ls "$chart"/ci/*.yaml | wc -l) value sets in $((SECONDS - started)) s (Helm $HELM_VERSION, Kubernetes $KUBE_VERSION schemas)"
