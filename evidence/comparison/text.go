package comparison

import (
	"fmt"
	"io"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// WriteText prints the matrix for a terminal and for compare-<id>.txt:
// verdicts, then what got through where, then what each column is and what
// its sessions cost. Every cell comes from run folders and names what
// sandboxes sent (attempt labels, runtimes, errors): each is printed
// through evidence.Redact, so it stays in its cell and acts on no terminal.
func (c *Comparison) WriteText(w io.Writer) {
	red := evidence.Redact
	width := 16
	for _, p := range c.Profiles {
		width = max(width, len(red(p.Label()))+2)
	}
	fmt.Fprintf(w, "\ncompare %s\n%-18s %-14s", red(c.ID), "GATE", "PATH")
	for _, p := range c.Profiles {
		fmt.Fprintf(w, "%-*s", width, red(p.Label()))
	}
	fmt.Fprintln(w)
	for _, r := range c.Matrix {
		fmt.Fprintf(w, "%-18s %-14s", red(r.Gate), red(r.Path))
		for _, v := range r.Verdicts {
			fmt.Fprintf(w, "%-*s", width, red(v))
		}
		fmt.Fprintln(w)
	}
	line := func(name string, cell func(p Column) string) {
		fmt.Fprintf(w, "%-33s", name)
		for _, p := range c.Profiles {
			fmt.Fprintf(w, "%-*s", width, red(cell(p)))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	line("target", func(p Column) string { return p.Target })
	line("runtime", func(p Column) string { return short(p.Runtime, width-2) })
	line("verdicts (pass/fail/other)", func(p Column) string {
		pass, fail, other := p.counts()
		return fmt.Sprintf("%d/%d/%d", pass, fail, other)
	})
	line("cold start median (ms)", func(p Column) string { return fmt.Sprintf("%.0f", p.ColdStart.MedianMS) })
	line("cold start p95 (ms)", func(p Column) string { return fmt.Sprintf("%.0f", p.ColdStart.P95MS) })
	line("sessions", func(p Column) string { return fmt.Sprint(p.ColdStart.N) })
	line("full run (s)", func(p Column) string { return fmt.Sprintf("%.1f", p.RunSeconds) })

	var through []string
	for _, r := range c.Matrix {
		for i, cell := range r.Cells {
			if len(cell.Through) > 0 {
				through = append(through, red(fmt.Sprintf("  %s · %s · %s: %s", c.Profiles[i].Label(), r.Gate, r.Path, strings.Join(cell.Through, ", "))))
			}
		}
	}
	if len(through) > 0 {
		fmt.Fprintln(w, "\nwhat got through (recorded by the lab's endpoints):")
		for _, t := range through {
			fmt.Fprintln(w, t)
		}
	}
	for _, p := range c.Profiles {
		if p.Error != "" {
			fmt.Fprintf(w, "%s: no complete verdicts: %s\n", red(p.Label()), red(firstLine(p.Error)))
		}
	}
}

// counts is the column's cells by verdict; "other" is everything that is
// neither PASS nor FAIL (INCONCLUSIVE, SKIPPED, not run).
func (p Column) counts() (pass, fail, other int) {
	for _, r := range p.Results {
		switch r.Verdict {
		case "PASS":
			pass++
		case "FAIL":
			fail++
		default:
			other++
		}
	}
	return
}

func short(s string, n int) string {
	s = firstLine(s)
	if n > 3 && len(s) > n {
		return termsafe.Truncate(s, n+2)
	}
	return s
}
