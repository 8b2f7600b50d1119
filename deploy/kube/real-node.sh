# Sourced by ci.sh with KUBE_NODE=kubelet, in place of kwok and test.mjs: one real node (containerd 1.6 and runc from
# Debian, the kubelet built by build.sh) and the chart's pods from the images `npm run images` exported. Optional,
# as root, not in .ci/run; what it proves and what it does not: docs/operations-helm.md, "Real pods".
# Needs: containerd and containernetworking-plugins (Debian), podman and skopeo (deploy/docker/setup-host.sh), the
# OCI archives of IMAGES_TAG (default: this commit's tag, as images.sh makes it) in IMAGES_OUT_DIR.
# Uses ci.sh's run, start, wait_for, section, tool, helm, server, token and kubeconfig.
node_ip=10.254.0.1
node="$run/node"
images_tag="${IMAGES_TAG:-$(git -C "$root" rev-parse --short=12 HEAD)$([ -z "$(git -C "$root" status --porcelain)" ] || echo -dirty)}"
images_out="${IMAGES_OUT_DIR:-${TMPDIR:-/tmp}/mileage-images}"
for program in containerd ctr podman skopeo /usr/lib/cni/bridge; do
  command -v "$program" >/dev/null || { echo "KUBE_NODE=kubelet needs $program" >&2; exit 1; }
done
mkdir -p "$node/cni"
ctr() { command ctr --address "$node/containerd.sock" --namespace k8s.io "$@"; }

# The node's address must not be a loopback one, and these machines have no dummy interface module ("Unknown device
# type"): a /32 on lo, removed on exit with the pods' bridge and the kubelet's mounts.
ip addr show dev lo | grep -q " $node_ip/" || ip addr add "$node_ip/32" dev lo
netns_before="$(ls /var/run/netns 2>/dev/null || true)"
kubelet_pid=""
# The kubelet first (it would restart the containers), then the containers (their shims outlive containerd), their
# mounts and network namespaces, then ci.sh's stop.
node_cleanup() {
  set +e
  [ -z "$kubelet_pid" ] || { kill "$kubelet_pid" 2>/dev/null; wait "$kubelet_pid" 2>/dev/null || true; }
  ctr tasks ls -q 2>/dev/null | while read -r task; do ctr tasks delete --force "$task" >/dev/null 2>&1 || true; done
  # A sandbox's shim can outlive its deleted task (seen once); those of this run's containerd only.
  pgrep -f -- "-address $node/containerd.sock" | while read -r shim; do kill "$shim" 2>/dev/null || true; done
  grep -o " $node/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount "$m" 2>/dev/null || true; done
  comm -13 <(echo "$netns_before") <(ls /var/run/netns 2>/dev/null || true) | while read -r ns; do
    ip netns del "$ns" 2>/dev/null || true
  done
  ip addr del "$node_ip/32" dev lo 2>/dev/null || true
  ip link del mileage-br0 2>/dev/null || true
  stop
}
trap node_cleanup EXIT

# containerd's defaults, but: its own root, state and socket under the run; the local pause image as the sandbox; the
# CNI plugins where Debian puts them; restrict_oom_score_adj, since a negative oom_score_adj is refused here ("write
# /proc/self/oom_score_adj: permission denied"; the sandbox's -998 made runc fail with "can't get final child's PID
# from pipe: EOF").
containerd config default | sed \
  -e "s#^root = .*#root = \"$node/containerd\"#" -e "s#^state = .*#state = \"$node/containerd-state\"#" \
  -e "s#address = \"/run/containerd/containerd.sock\"#address = \"$node/containerd.sock\"#" \
  -e 's#sandbox_image = .*#sandbox_image = "localhost/mileage-pause:v1"#' \
  -e 's#bin_dir = .*#bin_dir = "/usr/lib/cni"#' -e "s#conf_dir = \"/etc/cni/net.d\"#conf_dir = \"$node/cni\"#" \
  -e 's#restrict_oom_score_adj = false#restrict_oom_score_adj = true#' >"$node/containerd.toml"
cat >"$node/cni/10-mileage.conflist" <<'CNI'
{ "cniVersion": "1.0.0", "name": "mileage", "plugins": [
  { "type": "bridge", "bridge": "mileage-br0", "isGateway": true, "hairpinMode": true,
    "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.244.0.0/24" }]], "routes": [{ "dst": "0.0.0.0/0" }] } },
  { "type": "portmap", "capabilities": { "portMappings": true } } ] }
CNI
start containerd containerd --config "$node/containerd.toml"
wait_for containerd 60 ctr version

# Images under the names the chart gives them (localhost/mileage-<component>:<tag>); the archives name them
# mileage-<component>:<tag>, which the kubelet would read as docker.io/library/…
# shellcheck source=../docker/host/env.sh
source "$root/deploy/docker/host/env.sh"
mkdir -p "$node/pause-image" && cp "${tool[pause]}/pause" "$node/pause-image/"
printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$node/pause-image/Containerfile"
podman build --quiet -t localhost/mileage-pause:v1 "$node/pause-image" >/dev/null
skopeo copy --quiet containers-storage:localhost/mileage-pause:v1 "oci-archive:$node/pause.tar:mileage-pause:v1"
import_image() { ctr images import --base-name "$2" --index-name "$2" "$1" >/dev/null; }
import_image "$node/pause.tar" localhost/mileage-pause:v1
for c in gateway users groups drives scim webhooks; do
  import_image "$images_out/mileage-$c-$images_tag.oci.tar" "localhost/mileage-$c:$images_tag"
done
echo "images imported: $(ctr images ls -q | grep -c '^localhost/')"

section "kubelet"
cat >"$node/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$node/containerd.sock
address: $node_ip
readOnlyPort: 0
podLogsDir: $node/pod-logs
healthzBindAddress: 127.0.0.1
authentication: { anonymous: { enabled: false }, webhook: { enabled: false } }
authorization: { mode: AlwaysAllow }
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
evictionHard: { "memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%" }
YAML
start kubelet "${tool[kubelet]}/kubelet" --config "$node/kubelet.yaml" --kubeconfig "$run/kubeconfig" \
  --hostname-override mileage-node --node-ip "$node_ip" --root-dir "$node/kubelet"
kubelet_pid="${pids[-1]}"
api() { curl -fsS --cacert "$run/ca.crt" -H "Authorization: Bearer $token" "$server$1" "${@:2}"; }
node_ready() { api /api/v1/nodes/mileage-node | node -e '
  const { conditions } = JSON.parse(require("fs").readFileSync(0, "utf8")).status;
  process.exit(conditions?.some((c) => c.type === "Ready" && c.status === "True") ? 0 : 1);'; }
wait_for "the node Ready" 120 node_ready

section "the chart's pods from the images"
api /api/v1/namespaces -H 'Content-Type: application/json' -X POST -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"pods","labels":
  {"pod-security.kubernetes.io/enforce":"restricted"}}}' >/dev/null
wait_for "the default ServiceAccount" 60 api /api/v1/namespaces/pods/serviceaccounts/default
# Without the hooks: the migration Jobs need a PostgreSQL, which this node does not provide. The gRPC certificates'
# issuer is a hook too: it is run first from this machine, with the Job's own configuration (as test.mjs does).
issuer_config="$("$helm" template mileage "$root/deploy/helm/mileage" -n pods -f "$root/deploy/helm/mileage/ci/minimal.yaml" --kube-version 1.37.0 \
  --show-only templates/grpc-issuer.yaml | node -e '
  const docs = require("fs").readFileSync(0, "utf8").split(/^---$/m);
  const job = docs.find((d) => /^kind: Job$/m.test(d));
  const line = job.split("\n").findIndex((l) => l.includes("name: GRPC_ISSUER_CONFIG"));
  console.log(JSON.parse(job.split("\n")[line + 1].trim().replace(/^value: /, "")));')"
printf '%s' "$token" >"$run/issuer-token"
GRPC_ISSUER_CONFIG="$issuer_config" node "$root/packages/pki/dist/issue-grpc-certificates.js" --api-server "$server" \
  --token-file "$run/issuer-token" --ca-file "$run/ca.crt" >/dev/null
"$helm" --kubeconfig "$run/kubeconfig" install mileage "$root/deploy/helm/mileage" -n pods -f "$root/deploy/helm/mileage/ci/minimal.yaml" --no-hooks \
  --set image.registry=localhost --set image.tag="$images_tag" --set image.pullPolicy=Never >/dev/null
# The gateway and SCIM need no database: their containers start and the kubelet's startup probes (HTTP /healthz on
# the gateway, gRPC health on SCIM) pass, through the pod network.
started() { api /api/v1/namespaces/pods/pods | node -e '
  const pods = JSON.parse(require("fs").readFileSync(0, "utf8")).items;
  const of = (c) => pods.filter((p) => p.metadata.labels["app.kubernetes.io/component"] === c);
  const ok = ["gateway", "scim"].every((c) => of(c).length > 0 &&
    of(c).every((p) => p.status.containerStatuses?.every((s) => s.started && s.restartCount === 0)));
  for (const p of pods) console.log(p.metadata.name, p.status.podIP, JSON.stringify(p.status.containerStatuses?.[0]?.state));
  process.exit(ok ? 0 : 1);'; }
wait_for "the gateway's and SCIM's containers started, probes passing" 300 started
started
