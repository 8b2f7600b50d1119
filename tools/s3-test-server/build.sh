#!/usr/bin/env bash
# Builds the S3-compatible server the tests of the archive store's S3 path run against: SeaweedFS's `weed` (the
# version go.mod requires, from the Go module proxy; go.mod repeats its one replace directive, as a replace applies
# only in the main module), and prints the binary's path. Cached in
# ${XDG_CACHE_HOME:-~/.cache}/mileage-tools/s3/weed-<version>-<hash of go.mod and go.sum>, as deploy/kube/build.sh
# caches its tools: a warm run builds nothing. Two callers at once (CI's prefetch and a test) build it once.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(awk '$1 == "github.com/seaweedfs/seaweedfs" { print $2; exit }' "$here/go.mod")"
hash="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/s3"
binary="$cache/weed-$version-$hash"
mkdir -p "$cache"
if command -v flock >/dev/null; then
  exec 9>"$cache/.build.lock"
  flock 9
fi
if [[ ! -x "$binary" ]]; then
  echo "building seaweedfs $version from the Go module proxy (once; cached as $binary)" >&2
  started=$SECONDS
  # Static (no C compiler needed) and with module paths instead of this machine's, so the build cache is shared.
  (cd "$here" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$binary.partial" \
    github.com/seaweedfs/seaweedfs/weed) >&2
  mv "$binary.partial" "$binary"
  echo "built seaweedfs $version in $((SECONDS - started))s" >&2
fi
echo "$binary"
