package steps_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// The JUnit and cucumber reports carry the scenario's reason, which CI
// systems show to people: a stop error quoting what the sandbox named its
// process reaches them escaped and redacted; the result keeps it raw.
func TestReportsGetTheTeardownErrorEscaped(t *testing.T) {
	const hostile = "kill: process report\u202etxt.exe \u2066ghc0123456789abcdef\x1b]0;t\x07 still alive"
	tgt := leaving(onlyControl, false, nil, errors.New(hostile))
	folder, err := evidence.Create(t.TempDir(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := steps.Run(context.Background(), steps.Config{
		Target: tgt, Network: steps.NetLab, Lab: labOf(tgt), ProbePath: "/bin/true", Folder: folder,
		Features: features.FS, Gates: []string{"external-callback"}, Settle: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.WriteReports(folder, out.Results); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if !strings.Contains(r.Reason, hostile) {
			t.Errorf("%s: the result must keep what was found raw: %q", r.Path, r.Reason)
		}
	}
	for _, name := range []string{"junit.xml", "cucumber.json"} {
		b, err := os.ReadFile(filepath.Join(folder.Dir(), "reports", name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.Contains(s, "teardown left something behind") {
			t.Errorf("%s does not carry the teardown error", name)
		}
		for _, r := range s {
			if r != '\n' && r != '\t' && termsafe.Hidden(r) {
				t.Errorf("%s: %U reached the report", name, r)
				break
			}
		}
		if strings.Contains(s, "ghc0123456789abcdef") {
			t.Errorf("%s: the canary reached the report", name)
		}
	}
}
