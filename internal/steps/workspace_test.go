package steps

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// A wrapper target binds a profile's workspace where the storage gates
// look for the session's own storage.
func TestWorkspaceIsOwnStorage(t *testing.T) {
	if profile.WorkspacePath != OwnStorage {
		t.Errorf("wrapper workspace at %s, gates look at %s", profile.WorkspacePath, OwnStorage)
	}
}
