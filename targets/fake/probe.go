package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// The probe binary's exit codes (package probe's, which only the probe
// binary may import).
const (
	exitFailed   = 1
	exitBadPlan  = 2
	exitNotFound = 127 // what a shell says of a command it cannot find
)

// Src is the address a delivered attempt comes from (TEST-NET-2).
const Src = "198.51.100.2"

// Probe plays the probe binary at wire.SandboxPath: `run` (its plan on
// stdin, or from the file `--plan` names, the reports also written to the
// file `--out` names, replacing it), `show FILE` and `hold`. Any other
// command is not found (exit 127).
func (s *Session) Probe(ctx context.Context, cmd targets.Command) (targets.Result, error) {
	if len(cmd.Args) < 2 || cmd.Args[0] != wire.SandboxPath {
		return targets.Result{ExitCode: exitNotFound}, nil
	}
	stdout := cmd.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	switch args := cmd.Args[2:]; cmd.Args[1] {
	case "run":
		return s.run(args, cmd.Stdin, stdout)
	case "show":
		if len(args) != 1 {
			return targets.Result{ExitCode: exitBadPlan}, nil
		}
		b, ok := s.File(args[0])
		if !ok {
			return targets.Result{ExitCode: exitFailed}, nil
		}
		_, err := stdout.Write(b)
		return targets.Result{}, err
	case "hold":
		return hold(ctx, cmd.Stdin, stdout)
	}
	return targets.Result{ExitCode: exitBadPlan}, nil
}

func (s *Session) run(args []string, stdin io.Reader, stdout io.Writer) (targets.Result, error) {
	var planFile, outFile string
	for ; len(args) >= 2; args = args[2:] {
		switch args[0] {
		case "--plan":
			planFile = args[1]
		case "--out":
			outFile = args[1]
		default:
			return targets.Result{ExitCode: exitBadPlan}, nil
		}
	}
	in := stdin
	if planFile != "" {
		b, _ := s.File(planFile)
		in = bytes.NewReader(b)
	}
	var p wire.Plan
	// Only the plan is read: the harness keeps stdin open after it for
	// control lines.
	if len(args) > 0 || in == nil || json.NewDecoder(in).Decode(&p) != nil {
		return targets.Result{ExitCode: exitBadPlan}, nil
	}
	var kept bytes.Buffer
	w := stdout
	if outFile != "" {
		w = io.MultiWriter(stdout, &kept)
		defer func() { s.store(outFile, kept.Bytes()) }()
	}
	if s.t.Output != nil {
		for _, st := range p.Steps {
			s.deliver(st)
		}
		return targets.Result{}, s.t.Output(p, w)
	}
	enc := json.NewEncoder(w)
	for _, st := range p.Steps {
		start := time.Now()
		s.deliver(st)
		rep := Blocked(st)
		if s.t.Answer != nil {
			rep = s.t.Answer(s, st)
		}
		end := time.Now()
		rep.ID, rep.Kind, rep.Target, rep.Start = st.ID, st.Kind, st.Target, start
		rep.DurationMS = float64(end.Sub(start).Microseconds()) / 1000
		rep.ActiveFrom, rep.ActiveTo = time.Time{}, time.Time{}
		if !s.t.NoWindows {
			rep.ActiveFrom, rep.ActiveTo = start, end
		}
		if err := enc.Encode(rep); err != nil {
			return targets.Result{ExitCode: exitFailed}, nil
		}
	}
	return targets.Result{}, nil
}

// Blocked is the probe's report of an attempt a sandbox blocked that has
// no proxy: a proxy attempt finds none, any other times out (a drop).
func Blocked(st wire.Step) wire.Report {
	out := wire.OutcomeTimeout
	if st.Kind == wire.KindProxy {
		out = wire.OutcomeNoProxy
	}
	return wire.Report{ID: st.ID, Kind: st.Kind, Target: st.Target, Outcome: out, Start: time.Now()}
}

// deliver tells the lab of an attempt Deliver lets through, at the
// endpoint it would land on: the positive control at inference, a DNS
// attempt at the canary zone's authority, a metadata address at the AWS
// metadata service, anything else at the callback. The hit carries the
// step's header values, as the lab records a request's.
func (s *Session) deliver(st wire.Step) {
	if s.t.Lab == nil || s.t.Deliver == nil || !s.t.Deliver(st) {
		return
	}
	ep := "callback"
	switch {
	case st.ID == "positive-control":
		ep = "inference"
	case st.Kind == wire.KindDNS:
		ep = "dns-authority"
	case strings.Contains(st.Target, "169.254") || strings.Contains(st.Target, "metadata"):
		ep = "metadata-aws"
	}
	var values []string
	for _, v := range st.Headers {
		values = append(values, v)
	}
	sort.Strings(values)
	s.t.Lab.Add(evidence.Hit{Time: time.Now(), Endpoint: ep, Session: s.spec.Name, Proto: st.Kind, Src: Src,
		Summary: st.Target, Data: strings.Join(values, " ")})
}

// hold plays `probe hold`: it says it runs and stays until its stdin ends.
func hold(ctx context.Context, stdin io.Reader, stdout io.Writer) (targets.Result, error) {
	if _, err := io.WriteString(stdout, wire.HoldReady+" 1\n"); err != nil {
		return targets.Result{ExitCode: exitFailed}, nil
	}
	if stdin == nil {
		return targets.Result{}, nil
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stdin); close(done) }()
	select {
	case <-done:
		return targets.Result{}, nil
	case <-ctx.Done():
		return targets.Result{}, ctx.Err()
	}
}
