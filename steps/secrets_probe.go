package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gatehouse/probe"
	"gatehouse/targets"
)

// huntTimeout is the per-attempt deadline of hunts and host checks: a hunt
// walks folders and /proc and then presents what it found, which takes
// longer than one network attempt.
const huntTimeout = 4 * time.Second

// runHunt runs one plan like runProbe does (hostile output, capped and
// strictly decoded) but with the hunt deadline, and keeps each report's
// excerpt on its attempt: for these gates the excerpt is the evidence of a
// read (a planted value the probe could not have guessed).
func (r *runner) runHunt(ctx context.Context, s *scenario, steps []probe.Step) error {
	p := probe.Plan{Session: s.session, Canary: s.canary, TimeoutMS: int(huntTimeout / time.Millisecond), Steps: steps}
	in, err := json.Marshal(p)
	if err != nil {
		return err
	}
	lim := probe.DefaultLimits()
	stdout := &capped{max: int(lim.MaxBytes)}
	stderr := &capped{max: 16 << 10}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.sess.Exec(ctx, targets.Command{
		Args: []string{probe.SandboxPath, "run"}, Stdin: bytes.NewReader(in), Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		return fmt.Errorf("run probe: %w", err)
	}
	reps, problems, err := probe.Decode(bytes.NewReader(stdout.buf.Bytes()), p, lim)
	if err != nil {
		return fmt.Errorf("read probe output: %w", err)
	}
	for _, pr := range problems {
		s.findings = append(s.findings, "probe output rejected: "+pr)
	}
	if res.ExitCode != 0 {
		s.findings = append(s.findings, fmt.Sprintf("probe exited %d: %s", res.ExitCode, firstLine(stderr.buf.String())))
	}
	as := toAttempts(s, reps)
	for i := range as {
		as[i].Excerpt = reps[i].Excerpt
	}
	s.attempts = append(s.attempts, as...)
	r.recordAttempts(as)
	return nil
}
