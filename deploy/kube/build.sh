#!/usr/bin/env bash
# Builds the cluster's programs from the Go module proxy once, and prints the folder of each (NAME=path lines):
#   kubernetes  kube-apiserver, kube-controller-manager, kube-scheduler (build/control-plane: k8s.io/kubernetes with its
#               ./staging replace directives swapped for the published k8s.io/* modules; ≈ 15 min cold on 2 cores)
#   kubelet, pause  only with KUBE_NODE=kubelet: the kubelet (build/control-plane) and the pod sandbox's program
#               (build/pause)
#   etcd        etcd (build/etcd); kwok: kwok (build/kwok); yaml2json: the tests' YAML reader (build/yaml2json)
#   stages      kwok's Stages (its module's kustomize/stage): without them kwok refuses to start; with them it marks the
#               node Ready, renews its Lease, and moves pods Running and ready, a Job's pods Succeeded, deleted ones gone
#   crds        the CustomResourceDefinitions the chart's optional kinds need: ServiceMonitor, PodMonitor and
#               PrometheusRule from the prometheus-operator module's example/prometheus-operator-crd, Certificate from
#               cert-manager's deploy/crds (Helm template lines stripped), Cluster and ScheduledBackup from CloudNativePG's
#               config/crd/bases, ObjectStore from the Barman Cloud plugin's config/crd/bases
# Each is cached in ${XDG_CACHE_HOME:-~/.cache}/mileage-tools/kube/<name>-<version>-<hash of its go.mod and go.sum>, so
# a warm run builds nothing. Progress goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/kube"
PROMETHEUS_OPERATOR_VERSION=v0.85.0
CERT_MANAGER_VERSION=v1.21.2
# The Go module proxy serves these versions (its version list of CloudNativePG is refused: ask for one by name).
CLOUDNATIVE_PG_VERSION=v1.30.0
BARMAN_CLOUD_PLUGIN_VERSION=v0.15.0
export GOWORK=off CGO_ENABLED=0
mkdir -p "$cache"

# The version a scratch module requires of a module, e.g. version_of control-plane k8s.io/kubernetes.
version_of() { awk -v m="$2" '$1 == m || ($1 == "require" && $2 == m) { print ($1 == m ? $2 : $3); exit }' "$here/build/$1/go.mod"; }
key_of() { cat "$here/build/$1/go.mod" "$here/build/$1/go.sum" | sha256sum | cut -c1-8; }

# build NAME MODULE-DIR VERSION LDFLAGS PACKAGE...: go build into the cache, atomically (a .partial folder renamed).
build() {
  local name="$1" module="$2" version="$3" ldflags="$4"
  shift 4
  local dir="$cache/$name-$version-$(key_of "$module")"
  if [ ! -f "$dir/.complete" ]; then
    echo "building $name $version from the Go module proxy (once; cached in $dir)" >&2
    local started=$SECONDS
    rm -rf "$dir.partial" && mkdir -p "$dir.partial"
    # One package: the program is named NAME; several: each after its package.
    local out="$dir.partial/"
    [ "$#" -gt 1 ] || out="$dir.partial/$name"
    (cd "$here/build/$module" && nice -n 10 go build -trimpath -ldflags "-s -w $ldflags" -o "$out" "$@") >&2
    touch "$dir.partial/.complete"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
    echo "built $name $version in $((SECONDS - started)) s" >&2
  fi
  echo "$name=$dir"
}

kube_version="$(version_of control-plane k8s.io/kubernetes)"
minor="${kube_version#v1.}"
v=k8s.io/component-base/version
# Without these the binaries report v0.0.0-master, which Helm refuses against the chart's kubeVersion.
build kubernetes control-plane "$kube_version" \
  "-X $v.gitVersion=$kube_version -X $v.gitMajor=1 -X $v.gitMinor=${minor%%.*} -X $v.gitTreeState=clean" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
if [ "${KUBE_NODE:-kwok}" = kubelet ]; then
  # The real node of KUBE_NODE=kubelet (real-node.sh): the kubelet from the same module, and the sandbox's program.
  build kubelet control-plane "$kube_version" \
    "-X $v.gitVersion=$kube_version -X $v.gitMajor=1 -X $v.gitMinor=${minor%%.*} -X $v.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kubelet
  build pause pause v1 "" .
fi
build etcd etcd "$(version_of etcd go.etcd.io/etcd/server/v3)" "" go.etcd.io/etcd/server/v3
kwok_version="$(version_of kwok sigs.k8s.io/kwok)"
build kwok kwok "$kwok_version" "" sigs.k8s.io/kwok/cmd/kwok
build yaml2json yaml2json "$(version_of yaml2json sigs.k8s.io/yaml)" "" .

# The folder of a module the Go module proxy serves, e.g. module_dir sigs.k8s.io/kwok@v0.8.0 (downloaded once).
module_dir() { (cd "$cache" && go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'); }

stages="$cache/kwok-stages-$kwok_version"
if [ ! -f "$stages/.complete" ]; then
  echo "fetching the Stages of kwok $kwok_version" >&2
  rm -rf "$stages.partial" && mkdir -p "$stages.partial"
  kwok_stages="$(module_dir "sigs.k8s.io/kwok@$kwok_version")/kustomize/stage"
  # What kwokctl gives its nodes and pods: fast node start, heartbeats through the node's Lease, fast pods.
  for file in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    printf -- '---\n' && cat "$kwok_stages/$file.yaml"
  done >"$stages.partial/stages.yaml"
  touch "$stages.partial/.complete"
  rm -rf "$stages" && mv "$stages.partial" "$stages"
fi
echo "stages=$stages/stages.yaml"

crds="$cache/crds-prometheus-operator-$PROMETHEUS_OPERATOR_VERSION-cert-manager-$CERT_MANAGER_VERSION"
crds+="-cloudnative-pg-$CLOUDNATIVE_PG_VERSION-barman-cloud-$BARMAN_CLOUD_PLUGIN_VERSION"
if [ ! -f "$crds/.complete" ]; then
  echo "fetching the CRDs of prometheus-operator $PROMETHEUS_OPERATOR_VERSION, cert-manager $CERT_MANAGER_VERSION," \
    "CloudNativePG $CLOUDNATIVE_PG_VERSION and its Barman Cloud plugin $BARMAN_CLOUD_PLUGIN_VERSION" >&2
  rm -rf "$crds.partial" && mkdir -p "$crds.partial"
  prometheus="$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")"
  cert_manager="$(module_dir "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION")"
  cloudnative_pg="$(module_dir "github.com/cloudnative-pg/cloudnative-pg@$CLOUDNATIVE_PG_VERSION")"
  barman_cloud="$(module_dir "github.com/cloudnative-pg/plugin-barman-cloud@$BARMAN_CLOUD_PLUGIN_VERSION")"
  for kind in servicemonitors podmonitors prometheusrules; do
    cp "$prometheus/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$crds.partial/"
  done
  # Released as a Helm chart's templates: lines with template actions ({{ … }}) are dropped.
  grep -v '{{' "$cert_manager/deploy/crds/cert-manager.io_certificates.yaml" >"$crds.partial/cert-manager.io_certificates.yaml"
  for kind in clusters scheduledbackups; do
    cp "$cloudnative_pg/config/crd/bases/postgresql.cnpg.io_$kind.yaml" "$crds.partial/"
  done
  cp "$barman_cloud/config/crd/bases/barmancloud.cnpg.io_objectstores.yaml" "$crds.partial/"
  touch "$crds.partial/.complete"
  rm -rf "$crds" && mv "$crds.partial" "$crds"
fi
echo "crds=$crds"
