package probe_test

import (
	"os"
	"testing"

	"gatehouse/probe/probetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	probetest.Cleanup()
	os.Exit(code)
}
