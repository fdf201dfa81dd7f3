package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// The rehearsal's last word on the original repository is the runner's,
// not the verb's: a repository changed during the run turns the
// scenario's PASS into FAIL, in results and in the outcome alike.
func TestRehearsalOriginalChanged(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, repo string)
		want   evidence.Verdict
	}{
		{"left as it was keeps PASS", func(*testing.T, string) {}, evidence.Pass},
		{"a file changed makes FAIL", func(t *testing.T, repo string) {
			if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main // changed\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, evidence.Fail},
		{"a file added makes FAIL", func(t *testing.T, repo string) {
			if err := os.WriteFile(filepath.Join(repo, "Makefile"), []byte("all:\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, evidence.Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			repo := t.TempDir()
			if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rh, err := NewRehearsal(ctx, "20260101T000000Z-abcdef", RehearsalRequest{Repo: repo, Report: []byte("# report\n"),
				ReportName: "report.md", Instruction: "triage-instruction"})
			if err != nil {
				t.Fatal(err)
			}
			if rh.Inputs.Subject.Run != "20260101T000000Z-abcdef" || !strings.HasPrefix(rh.Inputs.Commit, "tree:") {
				t.Errorf("inputs %+v", rh.Inputs)
			}
			tt.change(t, repo)
			results := []evidence.Result{{Gate: "rehearsal", Verdict: evidence.Pass, Reason: "denied, result stored"}}
			if err := rh.checkOriginal(ctx, results); err != nil {
				t.Fatal(err)
			}
			oc := rh.outcome(results, nil)
			if results[0].Verdict != tt.want || oc.Verdict != tt.want {
				t.Fatalf("result %s, outcome %s (%s); want %s", results[0].Verdict, oc.Verdict, results[0].Reason, tt.want)
			}
			if tt.want == evidence.Fail && !strings.HasPrefix(results[0].Reason, "the original repository changed during the rehearsal") {
				t.Errorf("reason %q does not say why first", results[0].Reason)
			}
			if oc.Reason != results[0].Reason || oc.SessionError != "" {
				t.Errorf("outcome %q / %q, result %q", oc.Reason, oc.SessionError, results[0].Reason)
			}
		})
	}
}

// The outcome names the run's error, and a repository gone by the end is
// an error, never a verdict left standing.
func TestRehearsalOriginalGone(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	rh, err := NewRehearsal(ctx, "id", RehearsalRequest{Repo: repo, Report: []byte("r"), ReportName: "r.md"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(repo); err != nil {
		t.Fatal(err)
	}
	results := []evidence.Result{{Gate: "rehearsal", Verdict: evidence.Pass}}
	err = rh.checkOriginal(ctx, results)
	if err == nil {
		t.Fatal("a repository that cannot be read again is no error")
	}
	if oc := rh.outcome(results, err); oc.SessionError == "" {
		t.Error("the outcome does not name the run's error")
	}
}
