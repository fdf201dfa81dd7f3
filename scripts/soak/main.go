// Command soak runs the test suite several times and prints, per test, how
// often it passed and failed: a test that fails one time in fifty fails
// somebody's CI every week, and one run of the suite does not show it.
//
//	go run ./scripts/soak -n 10 [-run REGEXP] [packages...]
//
// Each round is `go test -count=1 -p 1 -json`; the exit code is 1 when any
// test failed in any round.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
}

type tally struct{ pass, fail, skip int }

func main() {
	n := flag.Int("n", 5, "rounds")
	run := flag.String("run", "", "only tests matching this regexp (go test -run)")
	timeout := flag.String("timeout", "45m", "per-round go test -timeout")
	flag.Parse()
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
		out, err := cmd.StdoutPipe()
		if err != nil {
			fatal(err)
		}
		if err := cmd.Start(); err != nil {
			fatal(err)
		}
		failed := read(out, counts)
		_ = cmd.Wait() // the failures are counted from the events
		fmt.Fprintf(os.Stderr, "soak: round %d/%d done after %s, %d failure(s) this round\n", i, *n, time.Since(start).Round(time.Second), failed)
	}
	if report(os.Stdout, counts, *n) {
		os.Exit(1)
	}
}

// read tallies one round's events and returns how many tests failed.
func read(r io.Reader, counts map[string]*tally) int {
	failed := 0
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
		case "pass":
			t.pass++
		case "fail":
			t.fail++
			failed++
		case "skip":
			t.skip++
		}
	}
	return failed
}

// report prints flaky and failing tests first, then a summary line.
func report(w io.Writer, counts map[string]*tally, rounds int) bool {
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
		if t.fail == 0 {
			continue
		}
		bad = true
		fmt.Fprintf(w, "%-8d %-8d %-8d  %s\n", t.pass, t.fail, t.skip, k)
	}
	if !bad {
		fmt.Fprintf(w, "every one of %d tests and packages passed (or skipped) in all %d rounds\n", total, rounds)
	} else {
		fmt.Fprintf(w, "(tests that never failed in %d rounds are not listed; %d in all)\n", rounds, total)
	}
	return bad
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(2)
}
