package wire

import (
	"hash/fnv"
	"strconv"
)

// Names and lines both sides know: what the probe writes where, so that the
// harness can find it on the host when a sandbox showed the probe the host's
// own folders, and take exactly it back (internal/hostwrite): every file the
// probe writes holds a value the harness minted.

// XSFile is the name of the file a "dir:" send leaves in each folder
// (internal/probe/channels_dirs.go), and what it holds.
func XSFile(v, where string) (name, content string) {
	return XSPrefix + Tag(v) + "-" + Tag(where), "GATEHOUSE " + v + "\n"
}

// XSSocket is the name of the socket file a "unix:" receive listens on.
func XSSocket(own string) string { return XSPrefix + Tag(own) + ".sock" }

// HeartbeatName is the name a session's heartbeat file starts with (the
// probe adds "-main" or "-child"): the hash of the session's tag, so
// sessions sharing a folder never append to one file, and a file's name
// says whose it is.
func HeartbeatName(v string) string { return ".gatehouse-heartbeat-" + Tag(v) }

// BeatLine is the line a heartbeat appends to its Path each beat: the
// session's tag, so the file is the session's beyond doubt.
func BeatLine(tag string) string { return "beat " + tag + "\n" }

// XSPrefix names what the probe leaves in shared folders, so each side can
// find the other's without knowing its value.
const XSPrefix = ".gatehouse-xs-"

// Tag is a short, stable name for a value that does not reveal it.
func Tag(v string) string {
	h := fnv.New32a()
	h.Write([]byte(v))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// SessionHeader carries the session's tag (Plan.Canary) on every HTTP
// request the probe makes, so a controlled endpoint can tell sessions apart
// when they share one network and one source address (host networking, a
// shared proxy). The tag is unguessable per session: a request carrying it
// came from that session's sandbox.
const SessionHeader = "X-Gatehouse-Session"

// AttemptHeader names the attempt (Step.ID) a request belongs to, so the
// lab's record of what got through can say which way it took. It is the
// probe's own label: shown, never used to decide a verdict.
const AttemptHeader = "X-Gatehouse-Attempt"

// ActivePrefix starts the stderr line a controlled plan's send or receive
// writes when it starts: "@active ID".
const ActivePrefix = "@active "

// SettledPrefix starts the Error of an attempt the harness settled.
const SettledPrefix = "settled by the harness"

// HoldReady is the line `probe hold` prints once it runs.
const HoldReady = "holding"

// RefusePrefix starts the Error of a write the probe would not make. Such a
// report carries OutcomeDenied, but it is the probe's own choice, not the
// sandbox's: the harness must not count it as a block.
const RefusePrefix = "probe refuses"
