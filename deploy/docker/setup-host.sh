#!/usr/bin/env bash
# Prepares a Debian machine (CI's, as root) to build and run the images: podman, buildah, skopeo, runc and mmdebstrap
# from Debian. Idempotent: installs only what is missing. Not crun: cgroups are hybrid v1 on these machines and crun
# fails there; host/env.sh tells podman to use runc and sets the limits the machine allows (our containers.conf,
# through CONTAINERS_CONF; nothing under /etc is edited).
set -euo pipefail
missing=()
for tool in podman buildah skopeo runc mmdebstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "images: installing ${missing[*]} from Debian" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# shellcheck source=host/env.sh
source "$(dirname "$0")/host/env.sh"
podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.CgroupsVersion}}' | grep -q '^runc ' ||
  { echo "images: podman does not use runc ($CONTAINERS_CONF)" >&2; exit 1; }
