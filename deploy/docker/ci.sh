#!/usr/bin/env bash
# CI's images step: the machine set up (deploy/docker/setup-host.sh), `npm run images` (the six images built, checked
# and exported; the local PostgreSQL, Redis and Keycloak images), then the system from those images with the
# acceptance suite and the drain on SIGTERM (stack.mjs). Expects `npm ci` and `npm run build` done. Each step's time
# is logged.
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$SECONDS
bash deploy/docker/setup-host.sh
echo "images: machine ready in $((SECONDS - t0)) s" >&2
t1=$SECONDS
read -r tag postgres redis keycloak < <(npm run --silent images | tail -1)
echo "images: built, checked and exported in $((SECONDS - t1)) s" >&2
t2=$SECONDS
# shellcheck source=host/env.sh
source deploy/docker/host/env.sh
node deploy/docker/stack.mjs "$tag" "$postgres" "$redis" "$keycloak"
echo "images: the system from its images in $((SECONDS - t2)) s; the whole step $((SECONDS - t0)) s" >&2
