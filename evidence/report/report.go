// Package report renders a run folder as one self-contained report.html:
// summary, each scenario's verdict with the evidence that decided it, the
// effective configuration and timings. No external assets, no script: it
// opens the same from a bundle on an air-gapped laptop as in a CI artifact
// viewer. Everything shown comes from the evidence, which is hostile input,
// so every value goes through html/template's escaping and the page carries
// a Content-Security-Policy that forbids scripts even if escaping failed.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// maxTraceLines bounds what Load reads from each trace; the report says when
// it stopped, and the trace in the bundle keeps everything.
const maxTraceLines = 200_000

// Input is what a report shows.
type Input struct {
	Run      evidence.Run
	Results  []evidence.Result
	Hits     []evidence.Hit     // every hit the lab recorded
	Attempts []evidence.Attempt // every attempt the probe reported
	Alerts   []Alert            // every alert matched to an attempt (traces/alerts.jsonl)
	// Unreadable counts trace lines that did not parse (hostile or cut
	// short); Truncated says a trace was longer than the report reads.
	Unreadable int
	Truncated  bool
}

// Load reads run.json, results.json and the traces from a run folder.
// Missing traces are empty evidence, not an error; a missing run.json or
// results.json is.
func Load(dir string) (Input, error) {
	var in Input
	if err := readJSON(filepath.Join(dir, evidence.RunFile), &in.Run); err != nil {
		return in, err
	}
	if err := readJSON(filepath.Join(dir, evidence.ResultsFile), &in.Results); err != nil {
		return in, err
	}
	if err := readLines(filepath.Join(dir, evidence.HitsTrace), &in, func(b []byte) error {
		var h evidence.Hit
		err := json.Unmarshal(b, &h)
		if err == nil {
			in.Hits = append(in.Hits, h)
		}
		return err
	}); err != nil {
		return in, err
	}
	if err := readLines(filepath.Join(dir, evidence.AttemptsTrace), &in, func(b []byte) error {
		var a evidence.Attempt
		err := json.Unmarshal(b, &a)
		if err == nil {
			in.Attempts = append(in.Attempts, a)
		}
		return err
	}); err != nil {
		return in, err
	}
	err := readLines(filepath.Join(dir, evidence.AlertsTrace), &in, func(b []byte) error {
		var l alertLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		// Unmatched events belong to no session's timeline, and the
		// "dropped" line has no event: both are read, neither is kept.
		if l.Event != nil && len(l.Matched) > 0 {
			e := l.Event
			in.Alerts = append(in.Alerts, Alert{Source: e.Source, Rule: e.Rule, Kind: e.Kind, Object: e.Object,
				EventTime: e.EventTime, Received: e.Received, Imported: e.Imported, Matched: l.Matched})
		}
		return nil
	})
	return in, err
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("report: %s: %w", filepath.Base(path), err)
	}
	return nil
}

func readLines(path string, in *Input, add func([]byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 0; sc.Scan(); n++ {
		if n == maxTraceLines {
			in.Truncated = true
			break
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if add(line) != nil {
			in.Unreadable++
		}
	}
	if err := sc.Err(); err != nil {
		// A line longer than the buffer: count it, keep what was read.
		in.Unreadable++
		in.Truncated = true
	}
	return nil
}
