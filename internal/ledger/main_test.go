package ledger_test

import (
	"os"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
)

// TestMain closes the ledger after the tests, as main does.
func TestMain(m *testing.M) { os.Exit(ledger.RunTests(m)) }
