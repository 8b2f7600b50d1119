// The pod sandbox's process: holds the namespaces, reaps orphans, exits on SIGINT/SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, _ := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 {
				break
			}
		}
	}
}
