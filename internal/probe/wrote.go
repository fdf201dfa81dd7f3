package probe

import (
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// What a writing attempt lists in its report (Report.Wrote, Report.Made),
// for the harness to find on the host; the names it writes under are in
// package wire (names.go).

// wrote notes a path the attempt wrote (or made: a socket file), in the
// report, as far as the caps allow. The harness checks every one itself.
func wrote(rep *wire.Report, p string) { note(rep, &rep.Wrote, p) }

// made notes a folder the attempt made.
func made(rep *wire.Report, p string) { note(rep, &rep.Made, p) }

// note adds p to list, within the caps Wrote and Made share.
func note(rep *wire.Report, list *[]string, p string) {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) || len(rep.Wrote)+len(rep.Made) >= wire.MaxWrote {
		return
	}
	n := len(p)
	for _, w := range append(append([]string(nil), rep.Wrote...), rep.Made...) {
		if w == p {
			return
		}
		n += len(w)
	}
	if n <= wire.MaxWroteBytes {
		*list = append(*list, p)
	}
}
