package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Limits bound what Decode takes from a probe's output.
type Limits struct {
	MaxBytes   int64 // total bytes read; the rest is ignored
	MaxLine    int   // bytes in one line, newline excluded
	MaxReports int   // reports kept
}

// DefaultLimits are 4 MiB in all, 64 KiB a line, 10000 reports.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 4 << 20, MaxLine: 64 << 10, MaxReports: MaxSteps}
}

// maxProblems bounds the problem list; one more entry says how many were cut.
const maxProblems = 100

// maxDurationMS is the longest duration a report may claim (1 h).
const maxDurationMS = 3600 * 1000

// Decode reads probe output as hostile input. It keeps the reports that are
// strictly valid (see strictReport and decoder.check), at most one per plan step, and describes
// everything it dropped in problems. It never fails on content; err is set
// only when reading r fails. Zero fields of lim take the defaults. It stops
// reading at lim.MaxBytes and does not drain r.
func Decode(r io.Reader, plan Plan, lim Limits) (reports []Report, problems []string, err error) {
	lim = lim.orDefaults()
	steps := make(map[string]Step, len(plan.Steps))
	for _, s := range plan.Steps {
		steps[s.ID] = s
	}
	d := decoder{steps: steps, seen: map[string]bool{}, lim: lim}
	br := bufio.NewReaderSize(io.LimitReader(r, lim.MaxBytes+1), lim.MaxLine+1)
	var consumed int64
	for lineNo := 1; ; lineNo++ {
		line, long, rerr := readLine(br, &consumed)
		if consumed > lim.MaxBytes {
			d.problem(fmt.Sprintf("output exceeds %d bytes: line %d and the rest ignored", lim.MaxBytes, lineNo))
			break
		}
		switch {
		case long || len(line) > lim.MaxLine:
			d.problem(fmt.Sprintf("line %d: longer than %d bytes, dropped", lineNo, lim.MaxLine))
		case len(line) > 0:
			d.line(lineNo, line)
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = fmt.Errorf("probe: decode reports: %w", rerr)
			}
			break
		}
	}
	return d.reports, d.finishProblems(), err
}

func (l Limits) orDefaults() Limits {
	def := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = def.MaxBytes
	}
	if l.MaxLine <= 0 {
		l.MaxLine = def.MaxLine
	}
	if l.MaxReports <= 0 {
		l.MaxReports = def.MaxReports
	}
	return l
}

// readLine returns the next line without its newline (and a trailing \r),
// or long=true when it exceeds the reader's buffer, in which case the whole
// line is skipped. consumed counts every byte taken from br.
func readLine(br *bufio.Reader, consumed *int64) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		*consumed += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true
			continue
		}
		if long {
			return nil, true, err
		}
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			chunk = chunk[:n-1]
		}
		if n := len(chunk); n > 0 && chunk[n-1] == '\r' {
			chunk = chunk[:n-1]
		}
		return chunk, false, err
	}
}

// quote shows a bounded, printable piece of hostile bytes in a problem.
func quote(b []byte) string {
	const show = 60
	if len(b) > show {
		return fmt.Sprintf("%q...", b[:show])
	}
	return fmt.Sprintf("%q", b)
}
