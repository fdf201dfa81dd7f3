package alerts

import (
	"bytes"
)

// Bounds on one audit group, so a stream without serial changes cannot
// grow without limit: past them the group is handed on as it is.
const (
	maxGroupRecords = 256
	maxGroupBytes   = 256 << 10
)

// Assembler groups consecutive audit records that share one
// audit(sec.ms:serial) stamp. auditd writes a multi-record event's records
// together and ends it with an EOE record; single-record events have no
// EOE, so a group is also complete when the next stamp begins (or, for a
// follower, when the file goes quiet: Flush).
type Assembler struct {
	stamp string
	buf   []byte
	n     int
}

// Add takes one line (with or without its newline) and returns the group
// it completed, if any. Blank lines are ignored; a line that is not an
// audit record is an error (and changes nothing).
func (a *Assembler) Add(line []byte) ([]byte, error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, nil
	}
	typ, stamp, _, err := auditHeader(line)
	if err != nil {
		return nil, malformed(FormatAudit, "record", err)
	}
	var done []byte
	if a.n > 0 && (stamp != a.stamp || a.n >= maxGroupRecords || len(a.buf)+len(line) > maxGroupBytes) {
		done = a.Flush()
	}
	if typ == "EOE" {
		if a.n > 0 && stamp == a.stamp {
			return a.Flush(), nil
		}
		return done, nil
	}
	a.stamp = stamp
	a.buf = append(a.buf, line...)
	a.buf = append(a.buf, '\n')
	a.n++
	return done, nil
}

// Flush returns the pending group (nil when none) and starts afresh.
func (a *Assembler) Flush() []byte {
	if a.n == 0 {
		return nil
	}
	g := a.buf
	a.buf, a.n, a.stamp = nil, 0, ""
	return g
}

// Pending reports whether a group is waiting for its end.
func (a *Assembler) Pending() bool { return a.n > 0 }
