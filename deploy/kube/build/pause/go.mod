// The pod sandbox image's one program (KUBE_NODE=kubelet, deploy/kube/real-node.sh): no registry serves
// registry.k8s.io/pause here, so it is built from this module and packed into an image locally.
module mileage.local/pause

go 1.26
