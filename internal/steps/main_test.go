package steps_test

import (
	"os"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

// TestMain closes the ledger after the tests, as main does: a test binary
// that recorded anything leaves no folder of its own behind.
func TestMain(m *testing.M) { os.Exit(ledger.RunTests(m, probetest.Cleanup)) }
