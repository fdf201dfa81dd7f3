package cgroupfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirIsUnderTheMount(t *testing.T) {
	m := Mount()
	if m == "" {
		t.Skip("no cgroup v2 hierarchy mounted here")
	}
	if _, err := os.Stat(filepath.Join(m, "cgroup.controllers")); err != nil {
		t.Errorf("Mount %s is not a cgroup v2 root: %v", m, err)
	}
	for _, tt := range []struct{ in, want string }{
		{"/gatehouse-x", m + "/gatehouse-x"},
		{"gatehouse-x", m + "/gatehouse-x"},
		{"/a/../../etc", m + "/etc"}, // never above the mount
		{"/", m},
	} {
		if got := Dir(tt.in); got != tt.want {
			t.Errorf("Dir(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
