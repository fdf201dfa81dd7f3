// Package auid gives a session's processes a login uid of their own.
//
// The kernel's login uid (audit's auid, Falco's user.loginuid, Tetragon's
// auid) is inherited by every child and cannot be changed from inside a
// sandbox (it needs CAP_AUDIT_CONTROL in the initial user namespace). Set on
// the thread that starts a sandbox, it becomes a session key every external
// monitor sees and no agent can forge.
package auid

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
)

// Set gives the calling thread a fresh login uid and returns it. Call it on
// a thread locked for the sandbox's start (runtime.LockOSThread, never
// unlocked): the thread's children inherit it; the process's other threads
// keep theirs.
func Set() (uint32, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, err
	}
	// Above every real account's uid, below the kernel's "unset" (2^32-1).
	id := 1<<30 + binary.BigEndian.Uint32(b[:])%(1<<30)
	if err := os.WriteFile("/proc/thread-self/loginuid", []byte(strconv.FormatUint(uint64(id), 10)), 0); err != nil {
		return 0, fmt.Errorf("set the session's login uid: %w", err)
	}
	return id, nil
}
