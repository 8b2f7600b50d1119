#!/usr/bin/env bash
# The chart on a real Kubernetes API server (CI runs it; so can a developer, as root or not, with Go, Node.js and
# openssl): etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built and cached by build.sh) on
# loopback, kwok simulating one node, all in a temporary folder removed on exit. Then test.mjs installs, upgrades,
# rolls back and uninstalls the chart with Helm (deploy/helm/helm.sh) and asserts on what the server did.
set -euo pipefail
started=$SECONDS
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
section() { printf '\n== %s (%ss)\n' "$1" "$((SECONDS - started))"; }

section "tools (build.sh, deploy/helm/helm.sh)"
declare -A tool
while IFS== read -r name dir; do tool[$name]="$dir"; done < <(bash "$here/build.sh")
helm="$(bash "$root/deploy/helm/helm.sh")"
kube="${tool[kubernetes]}"
echo "$("$kube/kube-apiserver" --version), etcd $("${tool[etcd]}/etcd" --version | sed -n 's/^etcd Version: //p')," \
  "kwok $("${tool[kwok]}/kwok" --version 2>/dev/null | head -1 || true), Helm $("$helm" version --template '{{ .Version }}')"

# The chart-managed certificates' issuer (packages/pki), which test.mjs runs as the chart's hook Job would.
(cd "$root" && npx tsc -b packages/pki)

section "cluster on loopback"
run="$(mktemp -d)"
pids=()
# In the reverse order of their start, each gone before the next: an API server whose etcd is gone first takes
# minutes to exit.
stop() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  rm -rf "$run"
}
trap stop EXIT
# start NAME COMMAND...: in the background, its output in $run/NAME.log (shown when the run fails).
start() {
  local name="$1"
  shift
  "$@" >"$run/$name.log" 2>&1 &
  pids+=($!)
}
logs() { tail -n 30 "$run"/*.log >&2 || true; }
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
# wait_for WHAT SECONDS COMMAND...: polls COMMAND (each try is a real check of the server) until it succeeds.
wait_for() {
  local what="$1" deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then logs; echo "$what did not come up in time" >&2; exit 1; fi
    sleep 0.5
  done
}

# A CA and the API server's certificate for 127.0.0.1, the service-account signing key, and the admin's token: new
# for every run.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=mileage-test-ca -keyout "$run/ca.key" -out "$run/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout "$run/apiserver.key" -out "$run/apiserver.csr" 2>/dev/null
openssl x509 -req -in "$run/apiserver.csr" -CA "$run/ca.crt" -CAkey "$run/ca.key" -CAcreateserial -days 1 \
  -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost') -out "$run/apiserver.crt" 2>/dev/null
openssl genrsa -out "$run/sa.key" 2048 2>/dev/null
openssl rsa -in "$run/sa.key" -pubout -out "$run/sa.pub" 2>/dev/null
token="$(openssl rand -hex 24)"
echo "$token,admin,admin,system:masters" >"$run/tokens.csv"

etcd_port="$(free_port)" etcd_peer_port="$(free_port)" api_port="$(free_port)" kwok_port="$(free_port)"
server="https://127.0.0.1:$api_port"
cat >"$run/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{ name: test, cluster: { server: "$server", certificate-authority: "$run/ca.crt" } }]
users: [{ name: admin, user: { token: "$token" } }]
contexts: [{ name: test, context: { cluster: test, user: admin } }]
current-context: test
KUBECONFIG
chmod 600 "$run/kubeconfig"

start etcd "${tool[etcd]}/etcd" --name test --data-dir "$run/etcd" --unsafe-no-fsync \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "test=http://127.0.0.1:$etcd_peer_port"
wait_for etcd 60 curl -fsS "http://127.0.0.1:$etcd_port/health"

# On loopback the endpoint reconciler refuses the advertised address: the "kubernetes" Service gets no endpoints,
# which nothing here needs. Privileged pods are allowed by the server so that Pod Security alone refuses them.
start kube-apiserver "$kube/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --endpoint-reconciler-type none \
  --tls-cert-file "$run/apiserver.crt" --tls-private-key-file "$run/apiserver.key" --client-ca-file "$run/ca.crt" \
  --token-auth-file "$run/tokens.csv" --authorization-mode RBAC --allow-privileged \
  --service-account-issuer https://kubernetes.default.svc.cluster.local --service-account-key-file "$run/sa.pub" \
  --service-account-signing-key-file "$run/sa.key" --service-cluster-ip-range 10.96.0.0/16 --cert-dir "$run/certs"
wait_for kube-apiserver 120 curl -fsS --cacert "$run/ca.crt" -H "Authorization: Bearer $token" "$server/readyz"

start kube-controller-manager "$kube/kube-controller-manager" --kubeconfig "$run/kubeconfig" --leader-elect=false \
  --secure-port 0 --service-account-private-key-file "$run/sa.key" --root-ca-file "$run/ca.crt" \
  --use-service-account-credentials=false
start kube-scheduler "$kube/kube-scheduler" --kubeconfig "$run/kubeconfig" --leader-elect=false --secure-port 0
if [ "${KUBE_NODE:-kwok}" = kubelet ]; then
  # shellcheck source=real-node.sh
  source "$here/real-node.sh"
  section "done"
  echo "the chart's pods on a real node: passed in $((SECONDS - started)) s"
  exit 0
fi
# kwok plays the kubelet of the nodes labelled type=kwok, as its Stages say: it keeps them Ready (renewing their
# Leases), marks their pods Running and ready, and a Job's pods Succeeded. No container runs.
start kwok "${tool[kwok]}/kwok" --kubeconfig "$run/kubeconfig" --config "${tool[stages]}" --manage-all-nodes=false \
  --manage-nodes-with-label-selector type=kwok --node-lease-duration-seconds 40 \
  --server-address "127.0.0.1:$kwok_port" --cidr 10.244.0.0/16

export KUBE_SERVER="$server" KUBE_TOKEN="$token" NODE_EXTRA_CA_CERTS="$run/ca.crt" KUBECONFIG="$run/kubeconfig"
export HELM="$helm" YAML2JSON="${tool[yaml2json]}/yaml2json" CRDS="${tool[crds]}" KUBE_LOGS="$run"
section "tests (test.mjs)"
if ! node --test --test-concurrency=1 "$here/test.mjs"; then
  logs
  exit 1
fi
section "done"
echo "chart on a real API server: passed in $((SECONDS - started)) s"
