package docker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The shim gives a root exec of an assume-breach session exactly the
// profile's capabilities, and leaves every other exec as Docker made it.
func TestShimSetsRootExecCapabilities(t *testing.T) {
	dir := t.TempDir()
	id := strings.Repeat("e", 64)
	if err := writeEntry(dir, id, sessionEntry{SetRootCaps: true, RootCaps: ociCaps([]string{"net_admin"})}); err != nil {
		t.Fatal(err)
	}
	dockerCaps := map[string]any{"bounding": []any{"CAP_NET_ADMIN", "CAP_CHOWN"}, "inheritable": []any{"CAP_CHOWN"}}
	for _, tc := range []struct {
		uid  int
		want any
	}{
		{0, map[string]any{"bounding": []any{"CAP_NET_ADMIN"}, "permitted": []any{"CAP_NET_ADMIN"}, "effective": []any{"CAP_NET_ADMIN"}}},
		{1000, dockerCaps},
	} {
		proc := filepath.Join(dir, "process.json")
		b, _ := json.Marshal(map[string]any{"user": map[string]any{"uid": tc.uid, "gid": tc.uid}, "args": []string{"/probe"}, "capabilities": dockerCaps, "noNewPrivileges": true})
		if err := os.WriteFile(proc, b, 0o600); err != nil {
			t.Fatal(err)
		}
		argv, err := shimArgs("/real", dir, []string{"--root", "/r", "exec", "--process", proc, "--detach", id})
		if err != nil {
			t.Fatal(err)
		}
		if argv[0] != "/real" || argv[len(argv)-1] != id {
			t.Errorf("argv %q", argv)
		}
		var got map[string]any
		b, _ = os.ReadFile(proc)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got["capabilities"], tc.want) {
			t.Errorf("uid %d: capabilities %v, want %v", tc.uid, got["capabilities"], tc.want)
		}
		if got["noNewPrivileges"] != true || got["args"] == nil {
			t.Errorf("uid %d: other fields changed: %v", tc.uid, got)
		}
	}
	if _, err := shimArgs("/real", dir, []string{"exec", id}); err == nil {
		t.Error("an exec without --process passed: its root would keep Docker's capabilities unseen")
	}
}
