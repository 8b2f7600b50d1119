#!/usr/bin/env bash
# Builds the S3-compatible test server (main.go) once per version of its sources and prints the binary's path.
# Cached in ${XDG_CACHE_HOME:-~/.cache}/mileage-tools/s3/s3-test-server-<hash of go.mod, go.sum, main.go>, as
# deploy/kube/build.sh caches its tools; Go modules come from the Go module proxy.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
hash="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-12)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/s3"
binary="$cache/s3-test-server-$hash"
if [[ ! -x "$binary" ]]; then
  mkdir -p "$cache"
  (cd "$here" && go build -o "$binary.partial" . && mv "$binary.partial" "$binary") >&2
fi
echo "$binary"
