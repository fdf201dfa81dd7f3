package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

func brokenProfile(name string) string {
	return filepath.Join("..", "..", "internal", "targets", "profile", "testdata", "broken", name)
}

func needNFT(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: nft -c runs in a network namespace of its own")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft (run scripts/setup.sh)")
	}
}

// An egress ruleset nft refuses is a usage error (exit 2) naming the
// ruleset's file and line, before anything starts: no run folder, no lab.
func TestRunWithBadRulesetExits2BeforeAnythingStarts(t *testing.T) {
	needNFT(t)
	out, probe := t.TempDir(), probetest.Build(t)
	before, err := lab.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := gatehouse(t, context.Background(), "run", "--profile", brokenProfile("bad-family.yaml"), "--out", out, "--probe", probe)
	after, err := lab.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.code != exitUsage {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitUsage, r.stdout, r.stderr)
	}
	if want := "bad-family.nft:9: egress: conflicting protocols"; !strings.Contains(r.stderr, want) {
		t.Fatalf("stderr %q does not name the ruleset's line (%q)", r.stderr, want)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("a refused run left %d entries in --out: %v", len(entries), entries)
	}
	if strings.Contains(r.stdout, "lab ") {
		t.Fatalf("a refused run started a lab:\n%s", r.stdout)
	}
	// Labs running for other tests on this machine add session namespaces
	// (gh-LAB-sN) all the time; a lab of this run would be a new gh-LAB.
	labs := map[string]bool{}
	for _, ns := range before {
		labs[labOf(ns)] = true
	}
	for _, ns := range after {
		if !slices.Contains(before, ns) && !labs[labOf(ns)] {
			t.Errorf("namespace %s appeared during a refused run", ns)
		}
	}
}

// labOf is the lab part of a lab or session namespace name: gh-LAB.
func labOf(ns string) string {
	if i := strings.Index(ns[len("gh-"):], "-"); i >= 0 {
		return ns[:len("gh-")+i]
	}
	return ns
}

// Every shipped profile passes --check (exit 0) and gets a plan that says
// where each control lives; --output json is the same plan, parseable.
func TestCheckShippedProfiles(t *testing.T) {
	needNFT(t)
	files, err := filepath.Glob(profilePath("*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped profiles: %v", err)
	}
	gates, err := features.Gates(features.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := gatehouse(t, context.Background(), "run", "--check", "--profile", file)
			if r.code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, want := range []string{"plan for profile ", "controls (where each lives", "egress ruleset", "gates       " + gates[0], ": OK ("} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("plan lacks %q:\n%s", want, r.stdout)
				}
			}
			r = gatehouse(t, context.Background(), "run", "--check", "--output", "json", "--profile", file)
			var pl profile.Plan
			if err := json.Unmarshal([]byte(r.stdout), &pl); r.code != exitOK || err != nil {
				t.Fatalf("--output json: exit %d, %v\n%s", r.code, err, r.stdout)
			}
			if len(pl.Controls) == 0 || len(pl.Paths) != 2 || !slices.Equal(pl.Gates, gates) || pl.PolicyDigest == "" {
				t.Fatalf("json plan incomplete: %+v", pl)
			}
		})
	}
}

// --check on a broken profile is exit 2 with the file and line at fault.
func TestCheckBrokenProfilesExit2(t *testing.T) {
	needNFT(t)
	files, err := filepath.Glob(brokenProfile("*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no broken profiles: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := gatehouse(t, context.Background(), "run", "--check", "--profile", file)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitUsage, r.stdout, r.stderr)
			}
			stem := strings.TrimSuffix(file, ".yaml")
			if !strings.Contains(r.stderr, stem+".yaml:") && !strings.Contains(r.stderr, stem+".nft:") {
				t.Fatalf("stderr %q names neither %s.yaml:LINE nor %s.nft:LINE", r.stderr, stem, stem)
			}
			if r.stdout != "" {
				t.Fatalf("a refused profile got a plan:\n%s", r.stdout)
			}
		})
	}
}
