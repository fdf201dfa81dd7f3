package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

const labHelp = `Usage: gatehouse lab up [--detach] [--docker] | down | status

The lab is a network namespace with no route out, holding the controlled
endpoints (callback server, DNS resolver and canary-zone authority, fake cloud
metadata, the allowed inference endpoint). 'gatehouse run' brings up a lab of
its own; these commands are for exploring it by hand.

  up        bring a lab up and serve until Ctrl-C, printing every hit
            (--detach: serve in the background; 'lab down' stops it;
            --docker: also run a Docker daemon inside the lab namespace
            and print its DOCKER_HOST; it stops with the lab)
  down      stop a detached lab and remove what runs that died left behind
            (namespaces, session cgroups and processes, staging and planted
            folders, init sockets, lab Docker daemons), found by ownership:
            each run keeps a ledger under /run/gatehouse/own, locked while
            it lives, so a live run's things are never touched
            (--all: also every other gh-* namespace and /run/gatehouse
            entry, e.g. from older versions; refused while a run is
            going on, naming its pid: it would pull the run's lab from
            under it)
  status    list the gh-* namespaces present and the detached lab, if any

The public-looking callback and second DNS authority (192.88.99.10, 3ffe::10,
192.88.99.54) can be moved with GATEHOUSE_LAB_PUBLIC_V4, _V6 and _DNS_V4
(docs/lab.md); a detached lab inherits them.

Example:
  sudo gatehouse lab up --detach
  sudo ip netns exec gh-<id> curl -s http://203.0.113.100/v1/complete
  sudo gatehouse lab down
`

const stateDir = "/run/gatehouse"

func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, labHelp)
		if len(args) == 0 {
			return usagef("lab: say up, down or status")
		}
		return nil
	}
	// 'lab up --help' works without root (help, completion); everything
	// else needs it.
	if os.Geteuid() != 0 && !(args[0] == "up" && isHelp(args[1:])) {
		return usagef("lab: needs root to manage network namespaces")
	}
	switch args[0] {
	case "up":
		fl := newFlagSet(ctx, "lab up")
		fl.SetOutput(stderr)
		detach := fl.Bool("detach", false, "serve in the background")
		withDocker := fl.Bool("docker", false, "also run a Docker daemon inside the lab namespace")
		fl.Usage = func() { fmt.Fprint(stderr, labHelp); fmt.Fprintln(stderr, "\nFlags of 'lab up':"); fl.PrintDefaults() }
		shortFlags(fl)
		if err := fl.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return &usageError{err}
		}
		if _, err := lab.PublicFromEnv(os.Getenv); err != nil {
			return &usageError{err} // before a detached lab is started
		}
		if *detach {
			return labDetach(stdout, *withDocker)
		}
		return labServe(ctx, stdout, *withDocker)
	case "serve": // the detached form, started by 'lab up --detach'
		return labServe(ctx, io.Discard, len(args) > 1 && args[1] == "--docker")
	case "down":
		all := len(args) > 1 && args[1] == "--all"
		if len(args) > 1 && !all {
			return usagef("lab down: unknown argument %q (only --all)", args[1])
		}
		return labDown(ctx, stdout, all)
	case "status":
		return labStatus(ctx, stdout)
	}
	return usagef("lab: unknown subcommand %q; say up, down or status", args[0])
}

type labState struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
}

func labServe(ctx context.Context, stdout io.Writer, withDocker bool) error {
	enc := json.NewEncoder(stdout)
	pub, err := lab.PublicFromEnv(os.Getenv)
	if err != nil {
		return &usageError{err}
	}
	l, err := lab.Up(ctx, lab.Options{HitLog: stdout, Public: pub})
	if err != nil {
		return err
	}
	defer l.Close(context.WithoutCancel(ctx))
	if withDocker {
		stop, err := labDocker(ctx, l.Name(), stdout)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	st := labState{PID: os.Getpid(), Name: l.Name()}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(stateDir, "lab.json"), b, 0o644); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(stateDir, "lab.json"))
	_ = enc.Encode(map[string]any{"lab": l.Name(), "addresses": l.Addrs(), "note": "serving until Ctrl-C; hits follow as JSON lines"})
	<-ctx.Done()
	return nil
}

func labDetach(stdout io.Writer, withDocker bool) error {
	if st, ok := readLabState(); ok && alive(st.PID) {
		return usagef("lab: a detached lab is already up (%s, pid %d); 'gatehouse lab down' first", st.Name, st.PID)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "lab", "serve")
	if withDocker {
		cmd.Args = append(cmd.Args, "--docker")
	}
	cmd.Env = hostenv.Gatehouse()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lab: start detached lab: %w", err)
	}
	for i := 0; i < 100; i++ {
		if st, ok := readLabState(); ok && st.PID == cmd.Process.Pid {
			fmt.Fprintf(stdout, "lab %s up (pid %d); stop it with 'gatehouse lab down'\n", st.Name, st.PID)
			return cmd.Process.Release()
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return errors.New("lab: the detached lab did not come up within 10 s")
}

func labDown(ctx context.Context, stdout io.Writer, all bool) error {
	if st, ok := readLabState(); ok && alive(st.PID) {
		_ = syscall.Kill(st.PID, syscall.SIGTERM)
		for i := 0; i < 100 && alive(st.PID); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Fprintf(stdout, "stopped lab %s (pid %d)\n", st.Name, st.PID)
		_ = os.Remove(filepath.Join(stateDir, "lab.json"))
	}
	if err := sweepLeftovers(ctx, stdout); err != nil {
		return err
	}
	left, _ := lab.List(ctx)
	if !all {
		if len(left) > 0 {
			fmt.Fprintf(stdout, "namespaces of live runs (or of versions without a ledger) left alone: %s\n"+
				"  ('gatehouse lab down --all' removes them too, when no run is going on)\n", strings.Join(left, " "))
		} else {
			fmt.Fprintln(stdout, "no lab namespaces left")
		}
		return nil
	}
	// --all removes every namespace and everything under /run/gatehouse:
	// a run going on would lose its lab, its ledger and its scratch
	// folders mid-verdict (seen: a CI run next to it failed on a vanished
	// scratch folder). Refuse while any run holds its ledger.
	if live, err := ledger.Live(); err != nil {
		return fmt.Errorf("lab down --all: cannot tell whether a run is going on: %w", err)
	} else if len(live) > 0 {
		return &busyError{live: live}
	}
	if err := lab.Cleanup(ctx); err != nil {
		return err
	}
	if len(left) > 0 {
		fmt.Fprintf(stdout, "removed namespaces: %s\n", strings.Join(left, " "))
	}
	_ = os.Remove(filepath.Join(stateDir, "lab.json"))
	if plants, _ := filepath.Glob(filepath.Join(stateDir, "*")); len(plants) > 0 {
		for _, p := range plants {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("lab down: remove %s: %w", p, err)
			}
		}
		fmt.Fprintf(stdout, "removed everything under %s: %d entries\n", stateDir, len(plants))
	}
	fmt.Fprintln(stdout, "no lab namespaces left")
	return nil
}

// busyError is lab down --all refusing: runs are going on.
type busyError struct{ live []string }

func (e *busyError) Error() string {
	var pids []string
	for _, o := range e.live {
		pid, _, _ := strings.Cut(o, "-")
		pids = append(pids, pid)
	}
	return fmt.Sprintf("lab down --all: %d Gatehouse run(s) are going on (pid %s): --all would remove their labs and folders mid-run. "+
		"Wait for them to end or stop them (kill PID; what they leave is swept by 'gatehouse lab down'), then run it again",
		len(pids), strings.Join(pids, ", "))
}

// sweepLeftovers removes what runs that died left behind (runner.Sweep).
func sweepLeftovers(ctx context.Context, out io.Writer) error { return runner.Sweep(ctx, out) }

func labStatus(ctx context.Context, stdout io.Writer) error {
	names, err := lab.List(ctx)
	if err != nil {
		return err
	}
	if st, ok := readLabState(); ok && alive(st.PID) {
		fmt.Fprintf(stdout, "detached lab: %s (pid %d)\n", st.Name, st.PID)
	} else {
		fmt.Fprintln(stdout, "detached lab: none")
	}
	if len(names) == 0 {
		fmt.Fprintln(stdout, "namespaces: none")
		return nil
	}
	fmt.Fprintf(stdout, "namespaces: %s\n", strings.Join(names, " "))
	return nil
}

func readLabState() (labState, bool) {
	var st labState
	b, err := os.ReadFile(filepath.Join(stateDir, "lab.json"))
	if err != nil || json.Unmarshal(b, &st) != nil || st.PID <= 0 {
		return st, false
	}
	return st, true
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.Contains(string(b), "lab")
}
