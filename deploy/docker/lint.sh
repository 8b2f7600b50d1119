#!/usr/bin/env bash
# Lints deploy/docker/Dockerfile with dockerfile-utils (npm; the linter of the Docker language server).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
report="$(npx --yes dockerfile-utils@0.16.3 lint "$here/Dockerfile" 2>&1 | grep -v 'npm warn' || true)"
if [ -n "$report" ]; then
  echo "$report"
  exit 1
fi
echo "Dockerfile lint: no problems"
