package bwrap_test

import (
	"os"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

// TestMain removes the probe build the tests and benchmarks share.
func TestMain(m *testing.M) {
	code := ledger.RunTests(m, probetest.Cleanup)
	os.Exit(code)
}
