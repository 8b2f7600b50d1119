// Scratch module of yaml2json (deploy/kube/build.sh).
module mileage.local/kube-yaml2json

go 1.26.0

require sigs.k8s.io/yaml v1.6.0

require go.yaml.in/yaml/v2 v2.4.2 // indirect
