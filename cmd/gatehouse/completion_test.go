package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// 'gatehouse help VERB' is 'gatehouse VERB --help', on stdout, exit 0.
func TestHelpVerbIsVerbHelp(t *testing.T) {
	ctx := context.Background()
	for _, v := range publicVerbs() {
		if v.name == "help" {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			h := gatehouse(t, ctx, "help", v.name)
			d := gatehouse(t, ctx, v.name, "--help")
			if h.code != exitOK || d.code != exitOK {
				t.Fatalf("help %s: exit %d; %s --help: exit %d", v.name, h.code, v.name, d.code)
			}
			if h.stdout == "" || h.stderr != "" {
				t.Errorf("help %s: the help belongs on stdout alone; stdout %d bytes, stderr %q", v.name, len(h.stdout), h.stderr)
			}
			if h.stdout != d.stdout+d.stderr {
				t.Errorf("help %s differs from %s --help:\n%s\n---\n%s", v.name, v.name, h.stdout, d.stdout+d.stderr)
			}
		})
	}
	if r := gatehouse(t, ctx, "help", "lab", "up"); r.code != exitOK || !strings.Contains(r.stdout, "-detach") {
		t.Errorf("help lab up: exit %d, %q", r.code, r.stdout)
	}
	if r := gatehouse(t, ctx, "help", "frobnicate"); r.code != exitUsage || !strings.Contains(r.stderr, "unknown command") {
		t.Errorf("help frobnicate: exit %d, %q", r.code, r.stderr)
	}
}

// Every flag set a verb builds is reached by completion: the names in the
// source and the sets collected are the same, so a new verb or
// subcommand cannot be left out of completion unnoticed.
func TestCompletionSeesEveryFlagSet(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`newFlagSet\(ctx, "([^"]+)"\)`)
	var inSource []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			inSource = append(inSource, m[1])
		}
	}
	var seen []string
	for k := range verbFlags(context.Background()) {
		if _, hand := handFlags[k]; !hand {
			seen = append(seen, k)
		}
	}
	sort.Strings(inSource)
	sort.Strings(seen)
	if len(inSource) < 10 || strings.Join(inSource, ",") != strings.Join(seen, ",") {
		t.Errorf("flag sets in the source:\n  %v\ncollected by completion:\n  %v", inSource, seen)
	}
}

// The bash script parses, names every verb and every flag 'run --help'
// lists, and completes in a real bash.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash")
	}
	ctx := context.Background()
	r := gatehouse(t, ctx, "completion", "bash")
	if r.code != exitOK {
		t.Fatalf("completion bash: exit %d: %s", r.code, r.stderr)
	}
	script := filepath.Join(t.TempDir(), "gatehouse.bash")
	if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, v := range publicVerbs() {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v.name) + `\b`).MatchString(r.stdout) {
			t.Errorf("the script does not mention verb %s", v.name)
		}
	}
	// run's flags as its own --help lists them (flag.PrintDefaults).
	help := gatehouse(t, ctx, "run", "--help")
	names := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(help.stderr, -1)
	if len(names) < 20 {
		t.Fatalf("run --help lists %d flags; the test cannot read them", len(names))
	}
	m := regexp.MustCompile(`(?m)"run "\*\) words="([^"]*)"`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no run case in the script:\n%s", r.stdout)
	}
	words := strings.Fields(m[1])
	for _, n := range names {
		if !contains(words, dashed(n[1])) {
			t.Errorf("run flag %s is not completed (run words: %v)", dashed(n[1]), words)
		}
	}
	for _, tt := range []struct{ line, want string }{
		{"gatehouse ru", "run"},
		{"gatehouse run --pro", "--probe --profile"},
		{"gatehouse run --output j", "json"},
		{"gatehouse lab ''", "up down status"},
		{"gatehouse verify somedir --keyl", "--keyless"},
		{"gatehouse completion f", "fish"},
		{"gatehouse run --profile ''", ""}, // a value: bash completes file names
	} {
		sh := "source " + script + `; COMP_WORDS=(` + tt.line + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _gatehouse; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bash, "-c", sh).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tt.want {
			t.Errorf("%s<TAB>: %q (%v), want %q", tt.line, out, err, tt.want)
		}
	}
}

// zsh and fish: their scripts are generated from the same sets and parse
// in their shells where those are installed.
func TestCompletionZshFish(t *testing.T) {
	for _, tt := range []struct{ shell, check string }{{"zsh", "-n"}, {"fish", "--no-execute"}} {
		t.Run(tt.shell, func(t *testing.T) {
			r := gatehouse(t, context.Background(), "completion", tt.shell)
			if r.code != exitOK || !strings.Contains(r.stdout, "gatehouse") || !strings.Contains(r.stdout, "--profile") && !strings.Contains(r.stdout, "-l profile") {
				t.Fatalf("completion %s: exit %d\n%s", tt.shell, r.code, r.stdout)
			}
			sh, err := exec.LookPath(tt.shell)
			if err != nil {
				t.Skipf("%s is not installed: the script was generated but not parsed", tt.shell)
			}
			script := filepath.Join(t.TempDir(), "gatehouse."+tt.shell)
			if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(sh, tt.check, script).CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", tt.shell, tt.check, err, out)
			}
		})
	}
	if r := gatehouse(t, context.Background(), "completion", "tcsh"); r.code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want %d", r.code, exitUsage)
	}
}
