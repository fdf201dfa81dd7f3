// Command gatehouse-probe is the attempt runner copied into a sandbox (see
// package probe). It must build with CGO_ENABLED=0: sandboxes have no libc.
//
// It installs no signal handler on purpose: how it dies on a stop signal is
// part of what the stop-signal gate observes.
package main

import (
	"context"
	"os"

	"gatehouse/probe"
)

func main() {
	os.Exit(probe.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
