#!/usr/bin/env bash
# kube-score and Checkov on rendered manifests (deploy/helm/test.sh calls it with every ci/ value set it rendered):
#   independent-linters.sh <name>=<rendered.yaml>...
# kube-score is built from the Go module proxy, Checkov installed from PyPI in a virtualenv; both cached in
# ${XDG_CACHE_HOME:-~/.cache}/mileage-tools. Every finding must be fixed in the chart or listed, with its reason, in
# linter-exceptions.yaml (check-linters.py compares; stale exceptions fail too). Exits non-zero otherwise.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
KUBE_SCORE_VERSION=v1.20.0
CHECKOV_VERSION=3.3.30
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools"
kube_score="$cache/kube-score-$KUBE_SCORE_VERSION/kube-score"
venv="$cache/checkov-$CHECKOV_VERSION"

if [ ! -x "$kube_score" ]; then
  command -v go >/dev/null || { echo "Go is needed to build kube-score $KUBE_SCORE_VERSION" >&2; exit 1; }
  echo "building kube-score $KUBE_SCORE_VERSION from the Go module proxy (once; cached in ${kube_score%/*})"
  rm -rf "${kube_score%/*}.partial"
  GOBIN="${kube_score%/*}.partial" GOFLAGS=-mod=mod CGO_ENABLED=0 go install "github.com/zegl/kube-score/cmd/kube-score@$KUBE_SCORE_VERSION"
  mv "${kube_score%/*}.partial" "${kube_score%/*}"
fi
if [ ! -f "$venv/.complete" ]; then
  echo "installing checkov==$CHECKOV_VERSION (once; cached in $venv)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "checkov==$CHECKOV_VERSION"
  touch "$venv/.complete"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
args=()
for pair in "$@"; do
  name="${pair%%=*}" file="${pair#*=}"
  # kube-score's JSON grades every check of every object; exit status 1 only means "some check failed".
  "$kube_score" score --output-format json "$file" >"$work/$name.kube-score.json" || [ $? -eq 1 ]
  # Offline: no Prisma Cloud account, no download of its guidelines; exit status 1 means "some check failed".
  BC_SKIP_MAPPING=TRUE "$venv/bin/checkov" --file "$file" --framework kubernetes --skip-download --quiet \
    --output json >"$work/$name.checkov.json" 2>"$work/$name.checkov.log" || [ $? -eq 1 ] ||
    { cat "$work/$name.checkov.log" >&2; exit 1; }
  args+=("$name" "$work/$name.kube-score.json" "$work/$name.checkov.json")
done
"$venv/bin/python" "$here/check-linters.py" "$here/linter-exceptions.yaml" "${args[@]}"
