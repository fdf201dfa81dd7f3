// Package pressure reads the kernel's pressure stall information (PSI):
// how long, in wall time, tasks waited for a CPU, for I/O or for memory.
// A timing judgement uses it to tell a slow sandbox from a machine too
// busy to measure one.
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

// Where the kernel keeps it (Linux 4.20+, CONFIG_PSI, not booted psi=0).
var (
	cpuFile    = "/proc/pressure/cpu"
	ioFile     = "/proc/pressure/io"
	memoryFile = "/proc/pressure/memory"
)

// Mark is one reading: the stall totals so far and when they were read.
type Mark struct {
	cpu, io, mem       time.Duration
	ok, ioOK, memoryOK bool
	at                 time.Time
	// The kernel's "some avg10" for I/O and memory: the share (percent)
	// of the last ten seconds some task waited on them.
	ioAvg10, memAvg10 float64
}

// Avg10 is the share, in percent, of the ten seconds before the mark that
// some task waited for I/O and for memory (0 when the kernel did not tell).
func (m Mark) Avg10() (io, memory float64) { return m.ioAvg10, m.memAvg10 }

// Avg10Reading is a mark that knows only those averages (a test's).
func Avg10Reading(io, memory float64) Mark {
	return Mark{ok: true, ioOK: true, memoryOK: true, ioAvg10: io, memAvg10: memory}
}

// Now reads the stall totals. A kernel without PSI gives a Mark that knows
// nothing (Known false): a judgement must then not lean on it. CPU is the
// one that must be there; I/O and memory count when the kernel tells them.
func Now() Mark {
	m := Mark{at: time.Now()}
	var err error
	m.cpu, err = readSome(cpuFile)
	m.ok = err == nil
	m.io, m.ioAvg10, err = readSomeAvg(ioFile)
	m.ioOK = err == nil
	m.mem, m.memAvg10, err = readSomeAvg(memoryFile)
	m.memoryOK = err == nil
	return m
}

// Reading is a mark of a CPU stall total read at a given time (a recorded
// reading, or a test's).
func Reading(total time.Duration, at time.Time) Mark { return Mark{cpu: total, at: at, ok: true} }

// Known says whether the kernel told the stall.
func (m Mark) Known() bool { return m.ok }

// Stalls are the wall time some task waited for each resource.
type Stalls struct{ CPU, IO, Memory time.Duration }

// Max is the longest of the three: the waits overlap, so not their sum.
func (s Stalls) Max() time.Duration { return max(s.CPU, s.IO, s.Memory) }

// SinceEach is the stall of each resource between an earlier mark and
// now, and the wall time between them; ok is false when the CPU reading
// of either knows nothing. A resource the kernel did not tell both times
// stalled zero.
func (m Mark) SinceEach(earlier Mark) (s Stalls, window time.Duration, ok bool) {
	window = m.at.Sub(earlier.at)
	if !m.ok || !earlier.ok || m.cpu < earlier.cpu {
		return Stalls{}, window, false
	}
	s.CPU = m.cpu - earlier.cpu
	if m.ioOK && earlier.ioOK && m.io >= earlier.io {
		s.IO = m.io - earlier.io
	}
	if m.memoryOK && earlier.memoryOK && m.mem >= earlier.mem {
		s.Memory = m.mem - earlier.mem
	}
	return s, window, true
}

// Since is the stall between an earlier mark and now, and the wall time
// between them; ok is false when either reading knows nothing. The stall
// is the longest of the three: the wall time some task waited for a CPU,
// for I/O (a slow disk under a neighbour's build: container removal and
// its fsyncs wait there while CPU pressure stays low, issue 22) or for
// memory.
func (m Mark) Since(earlier Mark) (stall, window time.Duration, ok bool) {
	s, window, ok := m.SinceEach(earlier)
	return s.Max(), window, ok
}

// readSomeAvg reads a pressure file's "some" total and avg10.
func readSomeAvg(p string) (time.Duration, float64, error) {
	b, err := readFile(p)
	if err != nil {
		return 0, 0, err
	}
	total, err := parseSome(b)
	if err != nil {
		return 0, 0, err
	}
	return total, parseAvg10(b), nil
}

// parseAvg10 reads "avg10=X" from the "some" line; 0 when absent or odd.
func parseAvg10(b []byte) float64 {
	for _, line := range bytes.Split(b, []byte("\n")) {
		fields := bytes.Fields(line)
		if len(fields) == 0 || string(fields[0]) != "some" {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := bytes.CutPrefix(f, []byte("avg10=")); ok {
				x, err := strconv.ParseFloat(string(v), 64)
				if err != nil || x < 0 || x > 100 {
					return 0
				}
				return x
			}
		}
	}
	return 0
}

// readFile reads a pressure file (a few lines; 4 KiB at most).
func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

// readSome parses the "some ... total=MICROSECONDS" line.
func readSome(p string) (time.Duration, error) {
	b, err := readFile(p)
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
