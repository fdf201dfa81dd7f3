// Package mainthread keeps the process's main thread to the main goroutine.
//
// Gatehouse starts sandboxes from goroutines that lock their OS thread and
// move it into a session's network (and mount) namespace, never unlocking:
// Go then ends that thread when the goroutine returns. Go cannot end the
// main thread, though: a locked goroutine that happened to run on it leaves
// it in the session's namespaces for good, and /proc/PID/ns/net (what `ip
// netns pids` and host-side checks read) names the main thread's. Locking
// the main goroutine to the main thread at start keeps every other
// goroutine off it. Import it for its side effect from every package that
// joins namespaces on a locked thread.
package mainthread

import "runtime"

func init() { runtime.LockOSThread() }
