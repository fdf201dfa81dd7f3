// Command gatehouse-probe is the attempt runner copied into a sandbox (see
// package probe), and the init that makes a bwrap session one sandbox
// instance ("init FD", package supervisor). It must build with
// CGO_ENABLED=0: sandboxes have no libc.
//
// The probe installs no signal handler on purpose: how it dies on a stop
// signal is part of what the stop-signal gate observes.
package main

import (
	"context"
	"os"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/targets/supervisor"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		os.Exit(supervisor.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(probe.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
