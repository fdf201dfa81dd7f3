package realwrap

import "github.com/gatehouse-dev/gatehouse/internal/targets/exec"

// SetSRTTmp moves srt's mount point for a test, off the shared /tmp.
func SetSRTTmp(p string) (restore func()) {
	old := srtTmp
	srtTmp = p
	return func() { srtTmp = old }
}

// Binds are the harness folders the target binds into its sessions.
func (t *Target) Binds() []exec.Bind { return t.binds }
