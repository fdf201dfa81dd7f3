// Command gatehouse-oci-runtime is the OCI runtime shim of Gatehouse's lab
// Docker daemon on its own (`gatehouse oci-runtime` does the same): the
// daemon runs it on every container create, so it links nothing but the
// shim and starts in about a millisecond. Built by `make build` beside
// gatehouse, which then prefers it.
package main

import (
	"os"

	"github.com/gatehouse-dev/gatehouse/internal/targets/docker/ocishim"
)

func main() { os.Exit(ocishim.Main(os.Args[1:], os.Stderr)) }
