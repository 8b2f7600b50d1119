# Sourced by the scripts beside it: podman and buildah read our containers.conf (no change under /etc), and the CA
# bundle the build hands to npm as a secret.
docker_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$(cd "$docker_dir/../.." && pwd)"
# podman/buildah settings of ours (CONTAINERS_CONF; nothing under /etc changes), written where the tools cache lives.
# podman raises the open-files and processes limits of a container beyond what these machines allow
# ("setrlimit RLIMIT_NOFILE: Operation not permitted"): a container gets the open-files hard limit this shell has,
# and processes capped at 32768, the limit podman lowers itself to (measured: more is refused). cgroups are hybrid v1
# here: crun fails, runc works.
if [ -z "${CONTAINERS_CONF:-}" ]; then
  nproc=$(ulimit -Hu) && { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
  export CONTAINERS_CONF="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/containers.conf"
  mkdir -p "$(dirname "$CONTAINERS_CONF")"
  cat >"$CONTAINERS_CONF.$$" <<CONF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  mv "$CONTAINERS_CONF.$$" "$CONTAINERS_CONF"
fi
# The trust store that reaches the registries from here (corporate TLS inspection adds its CA there).
ca_bundle="${IMAGES_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
node_version="$(cat "$root/.node-version")"
# The production FROM line's tag (deploy/docker/Dockerfile, ARG NODE_IMAGE), provided locally by base.sh.
base_image="node:${node_version}-bookworm-slim"
now_ms() { date +%s%3N; }
seconds_since() { local ms=$(($(now_ms) - $1)); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }
log() { echo "images: $*" >&2; }
