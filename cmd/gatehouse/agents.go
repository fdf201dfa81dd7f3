package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
)

const agentsHelp = `Usage: gatehouse agents list [--output json]
       gatehouse agents install NAME|all
       gatehouse agents lock [--out FILE]

Real agent CLIs that 'gatehouse run --agent NAME' drives against the lab's
scripted model on the normal path. Each adapter pins one exact version,
fetched only from the npm registry over https; every tarball must have the
sha512 integrity internal/agents/lock.json pins in the repository (whatever the
registry's metadata says; no package script runs). It is unpacked with no
link followed, no hard link, device, FIFO or setuid bit, and bounded, into
$GATEHOUSE_CACHE/agents/NAME-VERSION/ (default /var/cache/gatehouse) with a
manifest.json holding the sha256 of the binary. Installing again is a
no-op while the cache matches the pins, the lock and the digests.

  list      every adapter: pinned version, the API it speaks, installed or
            not, its cache folder and binary digest (--output json: an array
            of {name, package, version, api, installed, dir, binary,
            runtime, problem})
  install   fetch NAME (claude-code, codex, qwen-code, or the tool srt:
            Anthropic's sandbox-runtime with its pinned modules and Node 22,
            run by the srt target) or all of them; prints the install folder
            of each
  lock      ask the registry for the integrity of every pinned tarball
            (each platform package for linux-x64 and linux-arm64) and print
            the lock.json to commit (--out FILE writes it); refused when a
            version the current lock pins now has another integrity. Lists
            added and removed entries on stderr: review the diff.

  exec:PATH is a team's own agent: nothing to install; see docs/agents.md
  for its contract (GATEHOUSE_MODEL_URL, _KEY, _API, _TASK_FILE).

Environment: GATEHOUSE_CACHE (cache root), GATEHOUSE_NPM_REGISTRY (a mirror
of the npm registry, default https://registry.npmjs.org; https only),
GATEHOUSE_NPM_REGISTRY_INSECURE_LOOPBACK=1 (allows a plain http registry on
a loopback address, for a local mirror or a test; nothing else).
Exit 2 when an agent is neither cached nor fetchable (registry unreachable
or not https, integrity not the pinned one, unsafe tarball), with the reason.

Example:
  gatehouse agents install codex
  gatehouse agents list
  gatehouse run --profile targets/profiles/bwrap-hardened.yaml --agent codex
`

func runAgents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, agentsHelp)
		if len(args) == 0 {
			return usagef("agents: say list, install or lock")
		}
		return nil
	}
	cache := agents.DefaultCache(os.Getenv)
	switch args[0] {
	case "list":
		fl := newFlagSet(ctx, "agents list")
		fl.SetOutput(stderr)
		output := fl.String("output", "text", "text or json")
		fl.Usage = func() { fmt.Fprint(stderr, agentsHelp) }
		shortFlags(fl)
		if err := fl.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return &usageError{err}
		}
		if fl.NArg() > 0 || (*output != "text" && *output != "json") {
			return usagef("agents list: takes only --output text|json")
		}
		return agentsList(cache, *output, stdout)
	case "install":
		if len(args) != 2 || args[1] == "-h" || args[1] == "--help" {
			if len(args) == 2 {
				fmt.Fprint(stdout, agentsHelp)
				return nil
			}
			return usagef("agents install: say which agent (%v) or all", agents.Names())
		}
		names := []string{args[1]}
		if args[1] == "all" {
			names = append(agents.Names(), agents.Tools()...)
		}
		cache.Log = stderr
		for _, n := range names {
			if err := agentsInstall(ctx, cache, n, stdout, stderr); err != nil {
				return err
			}
		}
		return nil
	case "lock":
		fl := newFlagSet(ctx, "agents lock")
		fl.SetOutput(stderr)
		out := fl.String("out", "", "write the lock to this file instead of stdout")
		fl.Usage = func() { fmt.Fprint(stderr, agentsHelp) }
		if err := fl.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return &usageError{err}
		}
		if fl.NArg() > 0 {
			return usagef("agents lock: takes only --out FILE")
		}
		return agentsLock(ctx, cache, *out, stdout, stderr)
	}
	return usagef("agents: unknown subcommand %q; say list, install or lock", args[0])
}

// agentsInstall installs one adapter; every failure is exit 2: the agent
// is then not available, which is a configuration problem of this machine.
func agentsInstall(ctx context.Context, cache agents.Cache, name string, stdout, stderr io.Writer) error {
	a, err := agents.Lookup(name)
	if err != nil {
		var terr error
		if a, terr = agents.Tool(name); terr != nil {
			return &usageError{err}
		}
	}
	if a.Package == "" {
		fmt.Fprintf(stderr, "agents: %s is a command on this host; nothing to install\n", a.Name)
		return nil
	}
	in, fetched, err := cache.Install(ctx, a)
	switch {
	case errors.Is(err, agents.ErrRegistry):
		return usagef("agents install %s: %s %s is not cached in %s and the npm registry cannot be reached: %v", name, a.Name, a.Version, cache.Dir, err)
	case err != nil:
		return usagef("agents install %s: %v", name, err)
	}
	verb := "already installed"
	if fetched {
		verb = "installed"
	}
	fmt.Fprintf(stderr, "agents: %s %s %s (binary sha256 %s)\n", a.Name, a.Version, verb, in.Binary.SHA256)
	fmt.Fprintln(stdout, in.Dir)
	return nil
}

// agentsLock writes a fresh lock.json from the registry, refusing one that
// changes the integrity of a version the built-in lock pins.
func agentsLock(ctx context.Context, cache agents.Cache, out string, stdout, stderr io.Writer) error {
	cur, err := agents.EmbeddedLock()
	if err != nil {
		return &usageError{err}
	}
	next, err := cache.MakeLock(ctx, agents.Pinned())
	if err != nil {
		return usagef("agents lock: %v", err)
	}
	added, removed, err := cur.Changes(next)
	if err != nil {
		return usagef("agents lock: %v", err)
	}
	for _, id := range added {
		fmt.Fprintf(stderr, "agents lock: + %s %s\n", id, next.Packages[id].Integrity)
	}
	for _, id := range removed {
		fmt.Fprintf(stderr, "agents lock: - %s\n", id)
	}
	if len(added)+len(removed) == 0 {
		fmt.Fprintln(stderr, "agents lock: no change")
	}
	if out == "" {
		_, err := stdout.Write(next.JSON())
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, next.JSON(), 0o644); err != nil {
		return usagef("agents lock: %v", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return usagef("agents lock: %v", err)
	}
	return nil
}

type agentRow struct {
	Name      string       `json:"name"`
	Package   string       `json:"package"`
	Version   string       `json:"version"`
	API       agents.API   `json:"api"`
	Installed bool         `json:"installed"`
	Dir       string       `json:"dir"`
	Binary    *agents.File `json:"binary,omitempty"`
	Runtime   *agents.File `json:"runtime,omitempty"`
	Problem   string       `json:"problem,omitempty"`
}

func agentsList(cache agents.Cache, output string, stdout io.Writer) error {
	var rows []agentRow
	for _, n := range agents.Names() {
		a, _ := agents.Lookup(n)
		r := agentRow{Name: a.Name, Package: a.Package, Version: a.Version, API: a.API, Dir: cache.Folder(a)}
		in, err := cache.Open(a)
		if err != nil {
			r.Problem = err.Error()
		} else {
			r.Installed, r.Binary, r.Runtime = true, &in.Binary, in.Runtime
		}
		rows = append(rows, r)
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tAPI\tINSTALLED\tFOLDER\tBINARY SHA256")
	for _, r := range rows {
		inst, sum := "no", "-"
		if r.Installed {
			inst, sum = "yes", r.Binary.SHA256
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Version, r.API, inst, r.Dir, sum)
	}
	fmt.Fprintln(tw, "exec:PATH\t-\t(given)\t-\t(the host path)\t(at run time)")
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Problem != "" {
			fmt.Fprintf(stdout, "\n%s: %s\n  (gatehouse agents install %s)", r.Name, r.Problem, r.Name)
		}
	}
	fmt.Fprintln(stdout)
	return nil
}
