// yaml2json reads a multi-document YAML stream (helm template's output) on stdin and writes its non-empty documents
// as one JSON array, converted as Kubernetes converts manifests (sigs.k8s.io/yaml), for the cluster tests (test.mjs).
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	input, err := io.ReadAll(bufio.NewReader(os.Stdin))
	if err != nil {
		fail(err)
	}
	var documents [][]byte
	for _, document := range strings.Split("\n"+string(input), "\n---") {
		converted, err := yaml.YAMLToJSON([]byte(document))
		if err != nil {
			fail(err)
		}
		if trimmed := bytes.TrimSpace(converted); len(trimmed) > 0 && string(trimmed) != "null" {
			documents = append(documents, trimmed)
		}
	}
	os.Stdout.Write([]byte("[" + string(bytes.Join(documents, []byte(","))) + "]\n"))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "yaml2json:", err)
	os.Exit(1)
}
