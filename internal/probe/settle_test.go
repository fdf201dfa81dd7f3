package probe_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatehouse-dev/gatehouse/internal/probe"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func TestReadPlanStream(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		control  bool
		err      string
	}{
		{name: "plain", in: `{"session":"s","steps":[]}` + "\n"},
		{name: "plain trailing", in: `{"session":"s","steps":[]} x`, err: "trailing data"},
		{name: "controlled, lines follow", in: `{"session":"s","control":true,"steps":[]}` + "\nsettle a\n", control: true},
		{name: "unknown field", in: `{"session":"s","nope":1}`, err: "unknown field"},
		{name: "duplicate ids", in: `{"steps":[{"id":"a","kind":"tcp"},{"id":"a","kind":"tcp"}]}`, err: "probe: plan"},
		{name: "oversized", in: `{"session":"` + strings.Repeat("x", wire.MaxPlanBytes) + `"}`, err: "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, rest, err := wire.ReadPlanStream(strings.NewReader(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.control, p.Control)
			if tc.control {
				b, err := io.ReadAll(rest)
				require.NoError(t, err)
				require.Equal(t, "\nsettle a\n", string(b))
			} else {
				require.Nil(t, rest)
			}
		})
	}
}

// An attempt the harness settles ends at once as a timeout saying so; one
// it does not name runs on; lines it does not know change nothing.
func TestSettleEndsNamedAttempts(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	plan := wire.Plan{TimeoutMS: 10000, Control: true, Steps: []wire.Step{
		{ID: "stuck", Kind: wire.KindRead, Target: fifo},
		{ID: "quick", Kind: wire.KindRead, Target: filepath.Join(dir, "missing")},
	}}
	ctrlR, ctrlW := io.Pipe()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- probe.RunControlled(context.Background(), plan, &out, ctrlR, nil) }()
	_, err := io.WriteString(ctrlW, "hello there\nsettle nobody\n")
	require.NoError(t, err)
	// Named again until it ends: a settle that arrives before the attempt
	// runs is ignored by design (nothing of it was sent yet).
	require.NoError(t, waitSettling(ctrlW, "stuck", done))
	ctrlW.Close()
	reps := map[string]wire.Report{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var r wire.Report
		require.NoError(t, dec.Decode(&r))
		reps[r.ID] = r
	}
	require.Len(t, reps, 2)
	require.Equal(t, wire.OutcomeTimeout, reps["stuck"].Outcome)
	require.True(t, strings.HasPrefix(reps["stuck"].Error, wire.SettledPrefix), reps["stuck"].Error)
	require.NotEqual(t, wire.OutcomeTimeout, reps["quick"].Outcome, "an attempt that ended on its own keeps its outcome")
	require.NotContains(t, reps["quick"].Error, wire.SettledPrefix)
}

// The probe binary's run mode keeps reading control lines after a
// controlled plan (the harness keeps its stdin open).
func TestMainRunControlled(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	plan, err := json.Marshal(wire.Plan{TimeoutMS: 10000, Control: true, Steps: []wire.Step{{ID: "stuck", Kind: wire.KindRead, Target: fifo}}})
	require.NoError(t, err)
	inR, inW := io.Pipe()
	var out, errb bytes.Buffer
	codes := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		c := probe.Main(context.Background(), []string{"run"}, inR, &out, &errb)
		codes <- c
		done <- nil
	}()
	_, err = inW.Write(append(plan, '\n'))
	require.NoError(t, err)
	require.NoError(t, waitSettling(inW, "stuck", done))
	inW.Close()
	require.Equal(t, probe.ExitOK, <-codes, errb.String())
	var r wire.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Equal(t, wire.OutcomeTimeout, r.Outcome)
	require.True(t, strings.HasPrefix(r.Error, wire.SettledPrefix), r.Error)
}

// waitSettling writes "settle id" every few milliseconds until done says
// the run ended, and returns its error.
func waitSettling(w io.Writer, id string, done <-chan error) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if _, err := io.WriteString(w, "settle "+id+"\n"); err != nil {
				return err
			}
		}
	}
}

// "end" ends a receive as its duration would: completed, having listened,
// and it says on stderr when it started.
func TestEndEndsAReceiveAsItsDuration(t *testing.T) {
	dir := t.TempDir()
	plan := wire.Plan{TimeoutMS: 10000, Control: true, Steps: []wire.Step{
		{ID: "receive-tmp", Kind: wire.KindReceive, Target: "dir:" + dir, Payload: "ghc0011223344556677", DurationMS: 9000},
	}}
	ctrlR, ctrlW := io.Pipe()
	var out bytes.Buffer
	progR, progW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- probe.RunControlled(context.Background(), plan, &out, ctrlR, progW) }()
	line, err := bufio.NewReader(progR).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, wire.ActivePrefix+"receive-tmp\n", line)
	go io.Copy(io.Discard, progR)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var runErr error
	for ended := false; !ended; {
		select {
		case runErr = <-done:
			ended = true
		case <-tick.C:
			_, err := io.WriteString(ctrlW, "end receive-tmp\n")
			require.NoError(t, err)
		}
	}
	require.NoError(t, runErr)
	var r wire.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Equal(t, wire.OutcomeCompleted, r.Outcome, r.Error)
	require.False(t, r.ActiveFrom.IsZero(), "it listened")
	require.Less(t, r.DurationMS, 9000.0, "it did not run its whole duration")
}
