// Package ledger records what a Gatehouse process makes on the host that
// must not outlive it (session cgroups, staging and planting folders,
// namespaces, sockets, SysV segments), so that whatever a crashed run left
// behind — kill -9 gives no teardown a chance — is removed by the next run
// or by `gatehouse lab down`, by ownership and never by a broad name match.
//
// Each process that records anything holds an exclusive flock on the lock
// file of a folder of its own under Root for as long as it lives; the kernel
// drops the lock when the process dies, however it dies. Sweep takes that
// lock on every folder it can: a folder it can lock belongs to a dead
// process, and what it lists is removed. A live run's folder cannot be
// locked, so its things are never touched.
package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/hostwrite"
)

// Root holds one folder per recording process.
const Root = "/run/gatehouse/own"

// Kinds of things a ledger lists.
const (
	Cgroup  = "cgroup"   // a cgroup v2 folder: its processes are killed, then it is removed
	Netns   = "netns"    // a named network namespace (ip netns)
	Path    = "path"     // a file or folder, removed with everything in it
	SysvShm = "sysv-shm" // a System V shared-memory key, in the host's IPC namespace
	Mqueue  = "mqueue"   // a POSIX message queue name (/gatehouse-...), in the host's IPC namespace
	// ProbeWrite is a place on the host a sandboxed probe may have written
	// (a leaky sandbox showed it the host's own folders): only the run's
	// own payloads are taken out of it, and it is removed only if the run
	// made it (see hostwrite). What is its path; Write says how.
	ProbeWrite = "probe-write"
)

// Entry is one thing a process made.
type Entry struct {
	Kind  string           `json:"kind"`
	What  string           `json:"what"`            // a path, a namespace name or a key
	Write *hostwrite.Write `json:"write,omitempty"` // ProbeWrite: the run's bytes, and when it began
}

type ledger struct {
	mu   sync.Mutex
	dir  string
	lock *os.File // held for the life of the process
	seq  int
	err  error
	// lost is the first error of a note not written, kept for Lost.
	lost error
}

// Lost is the first note this process could not write, if any: what it
// was about would not be found by `gatehouse lab down` after a kill -9.
// Callers that drop Record's error report this once instead.
func Lost() error {
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.lost == nil {
		return own.err
	}
	return own.lost
}

var own ledger

// Record notes that this process made e.What. release removes the note;
// call it once the thing itself is gone. A ledger that cannot be written
// is not fatal (the thing is still made and cleaned up as usual); its
// error is returned so callers may report it.
func Record(e Entry) (release func(), err error) {
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.dir == "" && own.err == nil {
		own.dir, own.lock, own.err = claim()
	}
	if own.err != nil {
		return func() {}, own.err
	}
	own.seq++
	file := filepath.Join(own.dir, strconv.Itoa(own.seq)+".json")
	b, _ := json.Marshal(e)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		if own.lost == nil {
			own.lost = fmt.Errorf("ledger: %s: %w", e.What, err)
		}
		return func() {}, fmt.Errorf("ledger: %w", err)
	}
	return func() { _ = os.Remove(file) }, nil
}

// claim makes this process's folder and takes its lock.
func claim() (string, *os.File, error) {
	if err := os.MkdirAll(Root, 0o700); err != nil {
		return "", nil, fmt.Errorf("ledger: %w", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	dir := filepath.Join(Root, fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b)))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("ledger: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("ledger: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return "", nil, fmt.Errorf("ledger: lock %s: %w", dir, err)
	}
	return dir, f, nil
}

// Dir is this process's ledger folder ("" before anything was recorded).
func Dir() string {
	own.mu.Lock()
	defer own.mu.Unlock()
	return own.dir
}

// Close removes this process's folder when nothing is listed in it any
// more: a clean exit leaves no trace. What is still listed stays for the
// next sweep, which can take it once this process has exited.
func Close() {
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.dir == "" {
		return
	}
	if left, _ := filepath.Glob(filepath.Join(own.dir, "*.json")); len(left) > 0 {
		return
	}
	_ = os.RemoveAll(own.dir)
	own.lock.Close()
	own.dir, own.lock = "", nil
}

// RunTests runs a test binary's tests, then each cleanup (which may
// release ledger entries, as a shared probe build does), then Close, as
// main does: a test binary that exited clean leaves no folder (and its
// lock) in the ledger. In TestMain: os.Exit(ledger.RunTests(m)).
func RunTests(m interface{ Run() int }, cleanups ...func()) int {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	Close()
	return code
}
