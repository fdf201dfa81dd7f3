package hostenv_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
)

// A child gets the allow-list and what the caller adds, never a secret
// of the harness's environment.
func TestEnvPassesTheAllowListOnly(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("LANG", "C.UTF-8")
	for _, k := range []string{"COSIGN_PASSWORD", "SIGSTORE_ID_TOKEN", "CI_JOB_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, "secret-"+k)
	}
	t.Setenv("GATEHOUSE_LAB_PUBLIC_V4", "192.88.99.10")
	env := hostenv.Env("GATEHOUSE_SESSION=s1")
	own := hostenv.Gatehouse()
	for _, kv := range append(append([]string{}, env...), own...) {
		if strings.Contains(kv, "secret-") {
			t.Errorf("a secret reached a child: %s", kv)
		}
	}
	for _, want := range []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "GATEHOUSE_SESSION=s1"} {
		if !slices.Contains(env, want) {
			t.Errorf("Env() lacks %s: %v", want, env)
		}
	}
	if slices.Contains(env, "GATEHOUSE_LAB_PUBLIC_V4=192.88.99.10") || !slices.Contains(own, "GATEHOUSE_LAB_PUBLIC_V4=192.88.99.10") {
		t.Errorf("the harness's own settings: Env %v, Gatehouse %v", env, own)
	}
	if cmd := hostenv.Command(t.Context(), "true"); !slices.Equal(cmd.Env, hostenv.Env()) {
		t.Errorf("Command's Env = %v", cmd.Env)
	}
}

// guestSide are the folders whose code runs inside a sandbox or as a
// runtime's own child, where the environment is the sandbox's or the
// runtime's, not the harness's.
var guestSide = []string{"internal/probe", "cmd/gatehouse-probe", "internal/targets/supervisor", "internal/targets/docker/ocishim", "scripts", "internal/hostenv"}

var (
	startsChild = regexp.MustCompile(`\b(os)?exec\.Command(Context)?\(|&(os)?exec\.Cmd\{|\bsyscall\.(ForkExec|Exec|StartProcess)\(|\bos\.StartProcess\(`)
	setsEnv     = regexp.MustCompile(`\.Env = |\bEnv: `)
)

// No host-side code starts a program without an explicit environment, or
// hands it os.Environ(): every child of the harness gets hostenv's
// allow-list (or a smaller one of its own).
func TestNoChildInheritsTheHarnessEnvironment(t *testing.T) {
	root := filepath.Join("..", "..")
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || slices.Contains(guestSide, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.Contains(rel, "test/") {
			return nil
		}
		lines := readLines(t, p)
		for i, ln := range lines {
			if strings.Contains(ln, "os.Environ()") {
				bad = append(bad, rel+":"+strconv.Itoa(i+1)+": os.Environ() handed on")
			}
			if !startsChild.MatchString(ln) || strings.HasPrefix(strings.TrimSpace(ln), "//") {
				continue
			}
			// The environment is set on the same line or within the next
			// few, before the command starts.
			ok := false
			for j := i; j < len(lines) && j <= i+12; j++ {
				if setsEnv.MatchString(lines[j]) || strings.Contains(lines[j], "hostenv.") {
					ok = true
					break
				}
			}
			if !ok {
				bad = append(bad, rel+":"+strconv.Itoa(i+1)+": a child started with the harness's environment: "+strings.TrimSpace(ln))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

func readLines(t *testing.T, p string) []string {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
