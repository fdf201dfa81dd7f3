// Package pressure reads the kernel's CPU pressure (PSI): how long, in
// wall time, runnable tasks waited for a CPU. A timing judgement uses it
// to tell a slow sandbox from a machine too busy to measure one.
package pressure

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// cpuFile is where the kernel keeps it (Linux 4.20+, CONFIG_PSI).
var cpuFile = "/proc/pressure/cpu"

// Mark is one reading: the total stall so far and when it was read.
type Mark struct {
	total time.Duration
	at    time.Time
	ok    bool
}

// Now reads the CPU stall total. A kernel without PSI gives a Mark that
// knows nothing (Known false): a judgement must then not lean on it.
func Now() Mark {
	t, err := readSome(cpuFile)
	return Mark{total: t, at: time.Now(), ok: err == nil}
}

// Reading is a mark of a stall total read at a given time (a recorded
// reading, or a test's).
func Reading(total time.Duration, at time.Time) Mark { return Mark{total: total, at: at, ok: true} }

// Known says whether the kernel told the stall.
func (m Mark) Known() bool { return m.ok }

// Since is the stall between an earlier mark and now, and the wall time
// between them; ok is false when either reading knows nothing.
func (m Mark) Since(earlier Mark) (stall, window time.Duration, ok bool) {
	if !m.ok || !earlier.ok || m.total < earlier.total {
		return 0, m.at.Sub(earlier.at), false
	}
	return m.total - earlier.total, m.at.Sub(earlier.at), true
}

// readSome parses the "some ... total=MICROSECONDS" line.
func readSome(p string) (time.Duration, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return 0, err
	}
	return parseSome(b)
}

func parseSome(b []byte) (time.Duration, error) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) == 0 || string(fields[0]) != "some" {
			continue
		}
		for _, f := range fields[1:] {
			v, ok := bytes.CutPrefix(f, []byte("total="))
			if !ok {
				continue
			}
			us, err := strconv.ParseUint(string(v), 10, 63)
			if err != nil {
				return 0, fmt.Errorf("pressure: total %q: %w", v, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, errors.New("pressure: no \"some ... total=\" line")
}
