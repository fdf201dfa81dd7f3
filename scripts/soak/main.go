// Command soak runs the test suite several times and prints, per test, how
// often it passed and failed: a test that fails one time in fifty fails
// somebody's CI every week, and one run of the suite does not show it.
//
//	go run ./scripts/soak -n 10 [-run REGEXP] [-stress cpu|memory|io] [-keep DIR] [-all] [packages...]
//
// Each round is `go test -count=1 -p 1 -json`; the exit code is 1 when any
// test failed in any round. With -stress, stress-ng (Debian's package)
// loads the machine through each round, as a shared CI runner's builds
// would: cpu runs twice as many busy workers as there are cores, memory
// keeps a third of the RAM churning, io keeps the disk busy. A verdict
// must not depend on it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// keepTail bounds what is kept of one test's output: its last lines say
// why it failed.
const keepTail = 256 << 10

type tally struct{ pass, fail, skip int }

func main() {
	n := flag.Int("n", 5, "rounds")
	run := flag.String("run", "", "only tests matching this regexp (go test -run)")
	timeout := flag.String("timeout", "45m", "per-round go test -timeout")
	stress := flag.String("stress", "", "load the machine through each round: cpu, memory or io (needs stress-ng)")
	all := flag.Bool("all", false, "list every test's counts, not only those that failed")
	keep := flag.String("keep", "", "folder for each failed test's output, one file per round and test (default: a new gatehouse-soak-* folder in the temp folder)")
	flag.Parse()
	if *keep == "" {
		*keep = filepath.Join(os.TempDir(), "gatehouse-soak-"+time.Now().UTC().Format("20060102T150405"))
	}
	load, err := stressArgs(*stress)
	if err != nil {
		fatal(err)
	}
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	counts := map[string]*tally{}
	start := time.Now()
	for i := 1; i <= *n; i++ {
		args := []string{"test", "-count=1", "-p", "1", "-json", "-timeout", *timeout}
		if *run != "" {
			args = append(args, "-run", *run)
		}
		cmd := exec.Command("go", append(args, pkgs...)...)
		cmd.Stderr = os.Stderr
		roundDir := filepath.Join(*keep, fmt.Sprintf("round-%d", i))
		if os.Getenv("GATEHOUSE_KEEP_FAILED") == "" {
			// A failed end-to-end test keeps its run folder there too.
			cmd.Env = append(os.Environ(), "GATEHOUSE_KEEP_FAILED="+filepath.Join(roundDir, "runs"))
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			fatal(err)
		}
		stop, err := startStress(load)
		if err != nil {
			fatal(err)
		}
		if err := cmd.Start(); err != nil {
			stop()
			fatal(err)
		}
		failed := read(out, counts, roundDir)
		_ = cmd.Wait() // the failures are counted from the events
		stop()
		fmt.Fprintf(os.Stderr, "soak: round %d/%d done after %s, %d failure(s) this round%s\n", i, *n, time.Since(start).Round(time.Second), failed, under(*stress))
	}
	if report(os.Stdout, counts, *n, *all || *stress != "") {
		os.Exit(1)
	}
}

// read tallies one round's events and returns how many tests failed. The
// output of each test that failed is written to a file under keep, named
// in the line that says it failed: a failure under load that nobody can
// read is a flake nobody can fix.
func read(r io.Reader, counts map[string]*tally, keep string) int {
	failed := 0
	logs := map[string][]byte{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		name := e.Package
		if e.Test != "" {
			name += "." + e.Test
		}
		t := counts[name]
		if t == nil {
			t = &tally{}
			counts[name] = t
		}
		switch e.Action {
		case "output":
			b := append(logs[name], e.Output...)
			if len(b) > keepTail {
				b = b[len(b)-keepTail:]
			}
			logs[name] = b
		case "pass":
			t.pass++
			delete(logs, name)
		case "fail":
			t.fail++
			failed++
			// Said at once: a soak stopped early still names what failed.
			fmt.Fprintf(os.Stderr, "soak: FAIL %s (%.1fs)%s\n", name, e.Elapsed, save(keep, name, logs[name]))
			delete(logs, name)
		case "skip":
			t.skip++
			delete(logs, name)
		}
	}
	return failed
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// save writes a failed test's output and says where, or why not.
func save(dir, name string, out []byte) string {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ": output not kept: " + err.Error()
	}
	base := unsafeName.ReplaceAllString(name, "_")
	if len(base) > 200 {
		base = base[len(base)-200:] // the test's end of the name says most
	}
	f := filepath.Join(dir, base+".log")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		return ": output not kept: " + err.Error()
	}
	return ": " + f
}

// report prints flaky and failing tests first, then a summary line.
func report(w io.Writer, counts map[string]*tally, rounds int, all bool) bool {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	bad := false
	fmt.Fprintf(w, "%-8s %-8s %-8s  %s\n", "PASS", "FAIL", "SKIP", "TEST")
	total := 0
	for _, k := range names {
		t := counts[k]
		total++
		if t.fail == 0 && !all {
			continue
		}
		bad = bad || t.fail > 0
		fmt.Fprintf(w, "%-8d %-8d %-8d  %s\n", t.pass, t.fail, t.skip, k)
	}
	if !bad {
		fmt.Fprintf(w, "every one of %d tests and packages passed (or skipped) in all %d rounds\n", total, rounds)
	} else if !all {
		fmt.Fprintf(w, "(tests that never failed in %d rounds are not listed; %d in all)\n", rounds, total)
	}
	return bad
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(2)
}

// stressArgs are stress-ng's arguments for a kind of load.
func stressArgs(kind string) ([]string, error) {
	cores := runtime.NumCPU()
	switch kind {
	case "":
		return nil, nil
	case "cpu", "1":
		return []string{"--cpu", strconv.Itoa(2 * cores)}, nil
	case "memory":
		return []string{"--vm", strconv.Itoa(cores), "--vm-bytes", "33%", "--vm-keep"}, nil
	case "io":
		return []string{"--hdd", strconv.Itoa(cores), "--hdd-bytes", "512M", "--temp-path", os.TempDir()}, nil
	}
	return nil, fmt.Errorf("-stress %q: want cpu, memory or io", kind)
}

// startStress starts stress-ng in its own process group and returns what
// stops it (the whole group, so no worker outlives the round).
func startStress(args []string) (stop func(), err error) {
	if args == nil {
		return func() {}, nil
	}
	bin, err := exec.LookPath("stress-ng")
	if err != nil {
		return nil, fmt.Errorf("-stress needs stress-ng (apt-get install stress-ng): %w", err)
	}
	cmd := exec.Command(bin, append(args, "--quiet")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}, nil
}

func under(kind string) string {
	if kind == "" {
		return ""
	}
	return ", under " + kind + " stress"
}
