package lab_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// A session that loops small requests to an allowed endpoint (inference)
// must not grow the hit log's trace without bound: the trace keeps the
// hits the lab keeps, every other hit is counted, and a PASS can then
// only be INCONCLUSIVE. Real lab, real session namespace, real HTTP.
func TestFloodOfAnAllowedEndpointIsBounded(t *testing.T) {
	needLab(t)
	const requests = 400
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) (lab.Options, func() ([]byte, evidence.TraceCut))
		kept int
	}{
		{"the in-memory cap", func(t *testing.T) (lab.Options, func() ([]byte, evidence.TraceCut)) {
			var buf bytes.Buffer // not a bounded trace: the lab's own cap must hold for the file too
			return lab.Options{MaxHits: 50, HitLog: &buf}, func() ([]byte, evidence.TraceCut) { return buf.Bytes(), evidence.TraceCut{} }
		}, 50},
		{"a run folder's trace", func(t *testing.T) (lab.Options, func() ([]byte, evidence.TraceCut)) {
			f, err := evidence.Create(t.TempDir(), "flood")
			if err != nil {
				t.Fatal(err)
			}
			const rel = "traces/endpoint-hits.jsonl"
			f.LimitTrace(rel, evidence.TraceLimit{Lines: 60})
			return lab.Options{HitLog: f.Writer(rel)}, func() ([]byte, evidence.TraceCut) {
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(f.Dir(), rel))
				if err != nil {
					t.Fatal(err)
				}
				return b, f.Cuts()[rel]
			}
		}, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			opts, read := tc.opts(t)
			opts.Logf = t.Logf
			l, err := lab.Up(ctx, opts)
			if err != nil {
				t.Fatalf("Up: %v", err)
			}
			t.Cleanup(func() { _ = l.Close(context.WithoutCancel(ctx)) })
			nw := attach(t, l, "flood")
			c := client(nw)
			for i := range requests {
				resp, err := c.Get("http://" + lab.InferenceV4 + "/v1/models")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			c.CloseIdleConnections()
			// Close waits for requests in flight: after it, no hit arrives.
			if err := l.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			trace, cut := read()
			lines := bytes.Count(trace, []byte("\n"))
			kept, dropped := len(l.Hits()), l.Dropped()
			if kept != tc.kept || lines != kept {
				t.Fatalf("kept %d hits, trace has %d lines; want %d in both", kept, lines, tc.kept)
			}
			if dropped < requests-tc.kept {
				t.Fatalf("dropped %d, want at least %d (one hit per request, or more)", dropped, requests-tc.kept)
			}
			if cut.Lines != 0 && cut.DroppedLines != int64(dropped) {
				t.Fatalf("trace cut %+v, lab dropped %d: two counts of one loss", cut, dropped)
			}
			rs := []evidence.Result{{Gate: "external-callback", Session: "flood", Verdict: evidence.Pass}}
			evidence.Recheck(rs, l.Hits(), dropped)
			if rs[0].Verdict != evidence.Inconclusive {
				t.Fatalf("a PASS over a flooded hit log stayed %s", rs[0].Verdict)
			}
		})
	}
}
