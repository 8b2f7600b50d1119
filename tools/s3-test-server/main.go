// An S3-compatible server for the tests of the archive store's S3 path (packages/runtime/src/storage): gofakes3's
// S3 protocol over an in-memory backend, on the address given. Built and cached by build.sh, never deployed.
package main

import (
	"flag"
	"log"
	"net/http"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	address := flag.String("address", "127.0.0.1:0", "host:port to listen on")
	bucket := flag.String("bucket", "mileage-exports", "a bucket to create at start")
	flag.Parse()
	backend := s3mem.New()
	if err := backend.CreateBucket(*bucket); err != nil {
		log.Fatal(err)
	}
	server := gofakes3.New(backend)
	log.Printf("listening on %s", *address)
	log.Fatal(http.ListenAndServe(*address, server.Server()))
}
