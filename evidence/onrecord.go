package evidence

import "strings"

// searchKinds are the attempts that search (folders, environments, mount
// tables, sockets) rather than send: find, hunt, and the host checks.
var searchKinds = map[string]bool{"find": true, "hunt": true, "hostcheck": true}

// fileKinds are the attempts that open one named place: their report is
// the attempt when the kernel answered it.
var fileKinds = map[string]bool{"read": true, "list": true, "write": true, "stash": true}

// shortOf are the error texts (Go's own for these errnos, and the probe's
// for a panic) that say the machine ran short of something while the
// attempt ran, not that the sandbox decided: EIO, ENOMEM, EINTR, EAGAIN,
// EMFILE/ENFILE, ENOBUFS, and for writes ENOSPC and EDQUOT (a neighbour
// filled the disk: both sessions' writes fail, and the place would pass
// as writable by neither without ever being tested). A file system that
// answers EIO or EAGAIN by design never PASSes: fail-closed.
var shortOf = []string{
	"input/output error", "cannot allocate memory", "interrupted system call",
	"resource temporarily unavailable", "too many open files", "no buffer space available",
	"no space left on device", "disk quota exceeded",
	"attempt panicked",
}

// AttemptOnRecord reports whether a report counts as proof that a planned
// attempt of the secrets, host and storage gates was made. A search
// counts only when it covered everything it was asked to: it completed
// (a place that does not exist is covered), or the kernel refused it
// (denied, refused). A search that timed out, stopped part-way (partial)
// or failed inside the probe (error) proves nothing about what it did not
// reach, so it cannot support a PASS; what it did find still counts as
// proof of a read. A file attempt (read, list, write, stash) counts when
// the kernel answered it, whatever the answer, but not when it ran out of
// time or the machine ran short (FileAttemptCut): on a loaded machine a
// read of a host path that never finished gave host-access a PASS
// (issue 22). Other kinds (http, tcp, send, ...) count with any report:
// their proof is on the wire.
func AttemptOnRecord(a Attempt) bool {
	if fileKinds[a.Kind] {
		return !FileAttemptCut(a)
	}
	if !searchKinds[a.Kind] {
		return true
	}
	switch a.Outcome {
	case "completed", "denied", "refused":
		return true
	}
	return false
}

// FileAttemptCut reports whether a file attempt ended without the
// kernel's answer: out of time, or failed for want of memory, I/O or file
// descriptors, or in a panic.
func FileAttemptCut(a Attempt) bool {
	switch a.Outcome {
	case "timeout", "partial":
		return true
	case "error":
		for _, s := range shortOf {
			if strings.Contains(a.Error, s) {
				return true
			}
		}
	}
	return false
}
