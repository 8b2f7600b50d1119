#!/usr/bin/env bash
# Prints the path of Helm $HELM_VERSION, built once from the Go module proxy and cached in
# ${XDG_CACHE_HOME:-~/.cache}/mileage-tools/helm-<version>. Used by the chart tests (test.sh) and the cluster tests
# (deploy/kube/ci.sh). Messages go to stderr.
set -euo pipefail
HELM_VERSION=v3.22.0
helm_dir="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/helm-$HELM_VERSION"
helm="$helm_dir/helm"
if [ ! -x "$helm" ]; then
  command -v go >/dev/null || { echo "Go is needed to build Helm $HELM_VERSION" >&2; exit 1; }
  echo "building Helm $HELM_VERSION from the Go module proxy (once; cached in $helm_dir)" >&2
  rm -rf "$helm_dir.partial"
  GOBIN="$helm_dir.partial" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  mv "$helm_dir.partial" "$helm_dir"
fi
# Built by go install (no release ldflags), Helm reports only its minor version, e.g. v3.22.
case "$("$helm" version --template '{{ .Version }}')" in
  "$HELM_VERSION" | "${HELM_VERSION%.*}") ;;
  *) echo "$helm is not Helm $HELM_VERSION" >&2; exit 1 ;;
esac
echo "$helm"
