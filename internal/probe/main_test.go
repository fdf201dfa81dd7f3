package probe_test

import (
	"os"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	probetest.Cleanup()
	os.Exit(code)
}
