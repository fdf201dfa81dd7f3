package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"gatehouse/evidence"
)

// comparison is what compare records: one row per gate and path, one
// column per profile.
type comparison struct {
	ID       string       `json:"id"`
	Gates    string       `json:"gates,omitempty"`
	Profiles []profileRun `json:"profiles"`
	Matrix   []matrixRow  `json:"matrix"`
}

type profileRun struct {
	File    string `json:"file"`
	Profile string `json:"profile"`
	Target  string `json:"target"`
	RunID   string `json:"run_id,omitempty"`
	RunDir  string `json:"run_dir,omitempty"`
	// Sealed is the sha256 of the run's SHA256SUMS when the run was signed:
	// the matrix row points at evidence 'gatehouse verify' can check.
	Sealed     string    `json:"sealed_sha256sums,omitempty"`
	RunSeconds float64   `json:"run_seconds"`
	ColdStart  coldStart `json:"cold_start"`
	Error      string    `json:"error,omitempty"`

	results []evidence.Result
}

// coldStart is Target.Start until the session was ready, over a run's sessions.
type coldStart struct {
	N        int     `json:"sessions"`
	MedianMS float64 `json:"median_ms"`
	P95MS    float64 `json:"p95_ms"`
}

type matrixRow struct {
	Gate     string   `json:"gate"`
	Path     string   `json:"path"`
	Verdicts []string `json:"verdicts"` // in the order of profiles
}

func (l *startLog) summary() coldStart {
	l.mu.Lock()
	ds := append([]time.Duration(nil), l.ds...)
	l.mu.Unlock()
	if len(ds) == 0 {
		return coldStart{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	p95 := ds[(len(ds)*95+99)/100-1]
	return coldStart{N: len(ds), MedianMS: ms(ds[len(ds)/2]), P95MS: ms(p95)}
}

// rank orders verdicts from worst to best, for cells with several scenarios.
var rank = map[evidence.Verdict]int{evidence.Fail: 0, evidence.Inconclusive: 1, evidence.Skipped: 2, evidence.Pass: 3}

func (c *comparison) build() {
	type key struct{ gate, path string }
	cells := map[key][]string{}
	var keys []key
	for i, p := range c.Profiles {
		for _, r := range p.results {
			k := key{r.Gate, r.Path}
			if _, ok := cells[k]; !ok {
				cells[k] = make([]string, len(c.Profiles))
				keys = append(keys, k)
			}
			cur := evidence.Verdict(cells[k][i])
			if cur == "" || rank[r.Verdict] < rank[cur] {
				cells[k][i] = string(r.Verdict)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].gate != keys[j].gate {
			return keys[i].gate < keys[j].gate
		}
		return keys[i].path > keys[j].path // normal before assume-breach
	})
	for _, k := range keys {
		row := matrixRow{Gate: k.gate, Path: k.path, Verdicts: cells[k]}
		for i, v := range row.Verdicts {
			if v == "" {
				row.Verdicts[i] = "-"
			}
		}
		c.Matrix = append(c.Matrix, row)
	}
}

func (c *comparison) print(w io.Writer) {
	width := 16
	for _, p := range c.Profiles {
		width = max(width, len(p.label())+2)
	}
	fmt.Fprintf(w, "\ncompare %s\n%-18s %-14s", c.ID, "GATE", "PATH")
	for _, p := range c.Profiles {
		fmt.Fprintf(w, "%-*s", width, p.label())
	}
	fmt.Fprintln(w)
	for _, r := range c.Matrix {
		fmt.Fprintf(w, "%-18s %-14s", r.Gate, r.Path)
		for _, v := range r.Verdicts {
			fmt.Fprintf(w, "%-*s", width, v)
		}
		fmt.Fprintln(w)
	}
	line := func(name string, cell func(p profileRun) string) {
		fmt.Fprintf(w, "%-33s", name)
		for _, p := range c.Profiles {
			fmt.Fprintf(w, "%-*s", width, cell(p))
		}
		fmt.Fprintln(w)
	}
	line("target", func(p profileRun) string { return p.Target })
	line("cold start median (ms)", func(p profileRun) string { return fmt.Sprintf("%.0f", p.ColdStart.MedianMS) })
	line("cold start p95 (ms)", func(p profileRun) string { return fmt.Sprintf("%.0f", p.ColdStart.P95MS) })
	line("sessions", func(p profileRun) string { return fmt.Sprint(p.ColdStart.N) })
	line("full run (s)", func(p profileRun) string { return fmt.Sprintf("%.1f", p.RunSeconds) })
	for _, p := range c.Profiles {
		if p.Error != "" {
			fmt.Fprintf(w, "%s: run did not finish: %s\n", p.label(), strings.SplitN(p.Error, "\n", 2)[0])
		}
	}
}

func (p profileRun) label() string {
	if p.Profile != "" {
		return p.Profile
	}
	return p.File
}
