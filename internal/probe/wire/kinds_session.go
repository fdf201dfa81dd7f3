package wire

import (
	"regexp"
	"time"
)

// Attempt kinds of the session gates (foreign-storage, cross-session,
// stop-signal). The probe never learns another session's value: it reports
// every value of the harness's token shape it came across, and the harness,
// which knows whose value is whose, decides from outside what crossed.
const (
	// KindFind: Target is a folder, a glob of folders, or "@mounts" (every
	// mount point the sandbox sees, kernel-state and system software
	// excepted, with Step.Hints looked for under each first). Files under
	// it are read (see internal/probe/search.go: bounded, and "partial" when a bound or the
	// deadline stops it, with what was found kept), and the token-shaped
	// values found are reported as "value path" lines in Excerpt.
	KindFind = "find"
	// KindSend: Target is a channel ("tcp:HOST:PORT", "udp:HOST:PORT",
	// "dir:FOLDER" (see internal/probe/channels_dirs.go: also "dir:@writable", $HOME, $UID),
	// "unix:FOLDER", "abstract:NAME", "shm:KEY", "mq:NAME" (a POSIX message
	// queue: a send writes to NAME, a receive reads its own NAME),
	// "proc:environ" or "proc:cmdline" (a send checks that a process of its
	// own session shows the value there; a receive reads every other
	// process's)); Payload is offered on it repeatedly for DurationMS.
	KindSend = "send"
	// KindReceive: Target is a channel; the probe listens or looks on it for
	// DurationMS and reports the token-shaped values it got, except Payload
	// (its own).
	KindReceive = "receive"
	// KindHeartbeat: Target is a URL; the probe POSTs to it every
	// HeartbeatEvery for DurationMS, ignoring SIGTERM, and with Escape also
	// from a child that left its process group with setsid.
	KindHeartbeat = "heartbeat"
)

// MaxDuration caps DurationMS.
const MaxDuration = 60 * time.Second

// HeartbeatEvery is the heartbeat interval.
const HeartbeatEvery = 100 * time.Millisecond

// tokenRE is the shape of every value the harness hands out (canaries,
// nonces): "gh", a short lower-case tag, 16 hex digits.
var tokenRE = regexp.MustCompile(`gh[a-z]{0,5}[0-9a-f]{16}`)

// Tokens returns the distinct token-shaped values in b, in order of first
// appearance.
func Tokens(b []byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range tokenRE.FindAll(b, -1) {
		if !seen[string(m)] {
			seen[string(m)] = true
			out = append(out, string(m))
		}
	}
	return out
}
