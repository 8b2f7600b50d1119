#!/usr/bin/env bash
# Chart tests of deploy/helm/mileage, from a clean machine with Go and Python 3 (CI runs it):
#   1. tools: Helm built from the Go module proxy (helm.sh), a virtualenv with kubernetes-validate (which bundles the
#      Kubernetes API JSON schemas), PyYAML and promql-parser; cached in ${XDG_CACHE_HOME:-~/.cache}/mileage-tools;
#   2. every value set in mileage/ci/: `helm lint --strict`, `helm template`, the manifests validated (strict: no
#      unknown fields) against the API schemas of the oldest Kubernetes the chart supports and of the newest release
#      kubernetes-validate bundles, check-rendered.py's assertions (ServiceMonitor and PrometheusRule, CRDs without a
#      schema there, are checked by it), and check-env.mjs (when the workspaces are built: the environment passed to
#      the processes' own configuration schemas);
#   3. kube-score (Go module proxy) and Checkov (PyPI) on every rendered value set (independent-linters.sh): each
#      finding fixed or a reasoned exception in linter-exceptions.yaml;
#   4. values.yaml documents every key; every file in tests/bad-values/ is refused, with the message it names;
#   5. examples/offboard-job.yaml (the operator's one-off Job, docs/operations-helm.md) is valid and is the chart's
#      erase-due CronJob pod but for its args.
# Exits non-zero on any failure.
set -euo pipefail
started=$(date +%s)
here="$(cd "$(dirname "$0")" && pwd)"
chart="$here/mileage"
root="$(cd "$here/../.." && pwd)"

KUBERNETES_VALIDATE_VERSION=1.37.0
PYYAML_VERSION=6.0.3
PROMQL_PARSER_VERSION=0.12.0
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest whose schemas kubernetes-validate has.
KUBE_VERSIONS=(1.30.0 1.37.0)

cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools"
requirements="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION pyyaml==$PYYAML_VERSION promql-parser==$PROMQL_PARSER_VERSION"
venv="$cache/chart-venv-$(printf '%s' "$requirements" | sha256sum | cut -c1-12)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

section() { printf '\n== %s (%ss)\n' "$1" "$(($(date +%s) - started))"; }

# ------------------------------------------------------------------------------------------------------------ tools
section "tools"
helm="$(bash "$here/helm.sh")"
if [ ! -f "$venv/.complete" ]; then
  echo "installing $requirements (once; cached in $venv)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086 # the requirements are words
  "$venv/bin/pip" install --quiet --disable-pip-version-check $requirements
  touch "$venv/.complete"
fi
python="$venv/bin/python"
echo "Helm $("$helm" version --template '{{ .Version }}'), kubernetes-validate $KUBERNETES_VALIDATE_VERSION (Kubernetes ${KUBE_VERSIONS[*]} schemas), promql-parser $PROMQL_PARSER_VERSION"
if [ -f "$root/gateway/dist/config.js" ] && [ -f "$root/packages/runtime/dist/service/index.js" ] && command -v node >/dev/null; then
  check_env=yes
else
  check_env=no
  echo "the workspaces are not built: the environment is not checked against the processes' schemas (npm run build)"
fi

# ------------------------------------------------------------------------------------------------------- value sets
sets=0
rendered=()
for values in "$chart"/ci/*.yaml; do
  name="$(basename "$values" .yaml)"
  section "value set $name"
  "$helm" lint --strict "$chart" -f "$values" --kube-version "${KUBE_VERSIONS[-1]}" >"$out/$name.lint" 2>&1 \
    || { cat "$out/$name.lint"; echo "helm lint --strict failed for $name" >&2; exit 1; }
  grep -E '^1 chart\(s\) linted, 0 chart\(s\) failed' "$out/$name.lint"
  "$helm" template mileage "$chart" -f "$values" --namespace mileage --kube-version "${KUBE_VERSIONS[-1]}" >"$out/$name.yaml"
  for kube in "${KUBE_VERSIONS[@]}"; do
    # Only the Prometheus Operator's, cert-manager's and CloudNativePG's (and its Barman Cloud plugin's) kinds may lack
    # a schema here; check-rendered.py asserts on them, and deploy/kube has the API server check them against their CRDs.
    if ! "$venv/bin/kubernetes-validate" --kubernetes-version "$kube" --strict --quiet "$out/$name.yaml" >"$out/$name-$kube.validate" 2>&1; then
      cat "$out/$name-$kube.validate"; echo "$name: invalid for Kubernetes $kube" >&2; exit 1
    fi
    if grep -v "Couldn't find schema for kind \(ServiceMonitor\|PodMonitor\|PrometheusRule\|Certificate\|Cluster\|ScheduledBackup\|ObjectStore\) " "$out/$name-$kube.validate" | grep -q .; then
      cat "$out/$name-$kube.validate"; echo "$name: kubernetes-validate reported problems for Kubernetes $kube" >&2; exit 1
    fi
    echo "$name: $(grep -c '^kind:' "$out/$name.yaml") manifests valid against the Kubernetes $kube API schemas (strict)"
  done
  "$python" "$here/check-rendered.py" manifests "$out/$name.yaml" "$name" "$root/packages/runtime/src/telemetry/metrics.ts" "$out/$name.env.json" \
    | tee "$out/$name.checked"
  if [ "$check_env" = yes ]; then
    node "$here/check-env.mjs" "$out/$name.env.json" "$name" "$root"
  fi
  rendered+=("$name=$out/$name.yaml")
  sets=$((sets + 1))
done
[ "$sets" -ge 3 ] || { echo "expected at least 3 value sets in $chart/ci, found $sets" >&2; exit 1; }

# The operator's one-off Job of docs/operations-helm.md: valid, and the chart's CronJob pod but for its args in at
# least one value set (check-rendered.py compares them where the release, TLS and Redis are the example's).
section "the operator's example Job"
example="$here/examples/offboard-job.yaml"
for kube in "${KUBE_VERSIONS[@]}"; do
  "$venv/bin/kubernetes-validate" --kubernetes-version "$kube" --strict --quiet "$example" \
    || { echo "$example: invalid for Kubernetes $kube" >&2; exit 1; }
done
compared="$(grep -l "offboard-job.yaml is the CronJob" "$out"/*.checked | wc -l)"
[ "$compared" -ge 1 ] || { echo "$example: no value set rendered the CronJob it must match" >&2; exit 1; }
echo "$(basename "$example"): valid against the Kubernetes ${KUBE_VERSIONS[*]} API schemas (strict), matches the CronJob in $compared value sets"

# ------------------------------------------------------------------------------------------- independent linters
section "kube-score and Checkov"
bash "$here/independent-linters.sh" "${rendered[@]}"

# ----------------------------------------------------------------------------------------------- documentation, refusals
section "values.yaml documentation"
"$python" "$here/check-rendered.py" values-doc "$chart/values.yaml"

section "bad value sets are refused"
refused=0
schema_refusals=0
for bad in "$here"/tests/bad-values/*.yaml; do
  expect="$(sed -n 's/^# expect: //p' "$bad")"
  [ -n "$expect" ] || { echo "$bad: no '# expect:' line" >&2; exit 1; }
  if "$helm" template mileage "$chart" -f "$chart/ci/minimal.yaml" -f "$bad" --kube-version "${KUBE_VERSIONS[-1]}" >/dev/null 2>"$out/bad.err"; then
    echo "$(basename "$bad"): accepted, but must be refused" >&2; exit 1
  fi
  if ! grep -Eq -- "$expect" "$out/bad.err"; then
    cat "$out/bad.err"; echo "$(basename "$bad"): refused, but not with /$expect/" >&2; exit 1
  fi
  if grep -q "don't meet the specifications of the schema" "$out/bad.err"; then
    schema_refusals=$((schema_refusals + 1))
    how="by values.schema.json"
  else
    how="by the templates"
  fi
  echo "$(basename "$bad"): refused $how"
  refused=$((refused + 1))
done
[ "$schema_refusals" -ge 1 ] || { echo "no bad value set was refused by values.schema.json" >&2; exit 1; }

section "done"
echo "chart tests passed: $sets value sets, $refused bad value sets refused ($schema_refusals by the schema), in $(($(date +%s) - started)) s"
