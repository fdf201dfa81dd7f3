package probe

import (
	"path/filepath"
)

// What the probe writes, by name and content, so that the harness can
// find it on the host when a sandbox showed the probe the host's own
// folders, and take exactly it back (internal/hostwrite): every file the
// probe writes holds a value the harness minted.

// Caps of Report.Wrote: with the other fields at their caps and every
// byte escaped, a report line stays under Decode's line limit.
const (
	MaxWrote      = 64   // paths a report lists
	MaxWroteBytes = 4096 // bytes of all of them together
)

// XSFile is the name of the file a "dir:" send leaves in each folder
// (see sendFiles), and what it holds.
func XSFile(v, where string) (name, content string) {
	return xsPrefix + tag(v) + "-" + tag(where), "GATEHOUSE " + v + "\n"
}

// XSSocket is the name of the socket file a "unix:" receive listens on.
func XSSocket(own string) string { return xsPrefix + tag(own) + ".sock" }

// HeartbeatName is the name a session's heartbeat file starts with (the
// probe adds "-main" or "-child"): the hash of the session's tag, so
// sessions sharing a folder never append to one file, and a file's name
// says whose it is.
func HeartbeatName(v string) string { return ".gatehouse-heartbeat-" + tag(v) }

// BeatLine is the line a heartbeat appends to its Path each beat: the
// session's tag, so the file is the session's beyond doubt.
func BeatLine(tag string) string { return "beat " + tag + "\n" }

// wrote notes a path the attempt wrote (or made: a socket file), in the
// report, as far as the caps allow. The harness checks every one itself.
func wrote(rep *Report, p string) { note(rep, &rep.Wrote, p) }

// made notes a folder the attempt made.
func made(rep *Report, p string) { note(rep, &rep.Made, p) }

// note adds p to list, within the caps Wrote and Made share.
func note(rep *Report, list *[]string, p string) {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) || len(rep.Wrote)+len(rep.Made) >= MaxWrote {
		return
	}
	n := len(p)
	for _, w := range append(append([]string(nil), rep.Wrote...), rep.Made...) {
		if w == p {
			return
		}
		n += len(w)
	}
	if n <= MaxWroteBytes {
		*list = append(*list, p)
	}
}

// wroteKinds are the kinds whose reports may list paths written.
var wroteKinds = map[string]bool{KindStash: true, KindSend: true, KindReceive: true, KindWrite: true}
