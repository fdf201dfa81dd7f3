package main

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake/contract"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

const intakeHelp = `Usage: gatehouse intake --url URL --token-cmd CMD [--contract intake.yaml] [--out DIR] [--key cosign.key]
       gatehouse intake --reference [--out DIR] [--key cosign.key]

The intake gate: holds a results-intake service (the application a triage
agent sends its result to) to the intake contract (docs/intake.md). Each
check is a named PASS, FAIL or INCONCLUSIVE with the requests and responses
that proved it: a valid result is accepted and read back; an extra field,
a result for another report, run or tenant, an oversize field, a write after
finalise, a missing, garbled or expired token are refused and nothing of
them is stored (a read-back with a fresh token must not show it); a read
after finalise is still allowed.

CMD is run (split on spaces, no shell) with --run R --report P --tenant T
--ttl D appended, and prints a token for that subject on its first line.
The expiry check asks for --expired-ttl and waits it out.

--contract maps the abstract operations (read-report, attach-evidence,
submit-result, finalise) to the service's methods and path templates and
names its result fields; without it, the reference service's own mapping.
--reference starts the built-in reference service on 127.0.0.1 with its own
token command, so the gate can be tried without a service of one's own.

It writes a run folder like 'run' (results.json, run.json, the contract
under policy/, every exchange in traces/intake-exchanges.jsonl), sealed with
--key and recorded in the index.

Exit codes: 0 every check PASSed, 1 a check FAILed, 3 some check
INCONCLUSIVE (none FAILed), 2 usage or configuration.

Flags:
`

func runIntake(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "mint" {
		return runIntakeMint(ctx, args[1:], stdout, stderr)
	}
	var f runFlags
	var url, tokenCmd, contractFile string
	var reference bool
	var expiredTTL time.Duration
	fl := newFlagSet(ctx, "intake")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, intakeHelp); fl.PrintDefaults() }
	fl.StringVar(&url, "url", "", "base URL of the service under test (paths of the contract are appended)")
	fl.StringVar(&tokenCmd, "token-cmd", "", "command that prints a token (given --run --report --tenant --ttl)")
	fl.StringVar(&contractFile, "contract", "", "contract file mapping operations and fields (default: the reference service's)")
	fl.BoolVar(&reference, "reference", false, "test the built-in reference service, started on 127.0.0.1")
	fl.DurationVar(&expiredTTL, "expired-ttl", time.Second, "lifetime asked for the token the expiry check waits out")
	fl.StringVar(&f.out, "out", "gatehouse-runs", "folder that receives the run folder")
	fl.StringVar(&f.key, "key", "", "cosign private key to seal the run folder with (password from COSIGN_PASSWORD)")
	fl.StringVar(&f.db, "db", "", "SQLite index to record the run in (default <out>/gatehouse-index.db)")
	shortFlags(fl)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	switch {
	case fl.NArg() > 0:
		return usagef("intake: unexpected argument %q", fl.Arg(0))
	case reference && url != "":
		return usagef("intake: --reference and --url are mutually exclusive")
	case !reference && (url == "" || tokenCmd == ""):
		return usagef("intake: give --url and --token-cmd (or --reference)")
	case expiredTTL <= 0:
		return usagef("intake: --expired-ttl must be positive")
	}
	c, policy := contract.Reference(), []byte(nil)
	if contractFile != "" {
		b, err := os.ReadFile(contractFile)
		if err != nil {
			return usagef("intake: --contract: %w", err)
		}
		if c, err = contract.Parse(b); err != nil {
			return usagef("intake: --contract %s: %w", contractFile, err)
		}
		policy = b
	} else {
		b, err := yaml.Marshal(c)
		if err != nil {
			return fmt.Errorf("intake: %w", err)
		}
		policy = b
	}
	signer, err := loadSealer("intake", f.key, signFlags{})
	if err != nil {
		return err
	}
	target := url
	if reference {
		stop, u, cmd, err := startReference(ctx)
		if err != nil {
			return err
		}
		defer stop()
		url, target = u, "reference"
		if tokenCmd == "" {
			tokenCmd = cmd
		}
	}
	return intakeGate(ctx, f, signer, target, contractFile, policy,
		contract.Options{BaseURL: url, Contract: c, Mint: contract.CommandMint(tokenCmd), ExpiredTTL: expiredTTL}, stdout)
}

// intakeGate runs the gate through runner.Intake, then seals, indexes and
// prints the run.
func intakeGate(ctx context.Context, f runFlags, signer sealer, target, contractFile string, policy []byte, o contract.Options, stdout io.Writer) error {
	res, err := runner.Intake(ctx, runner.IntakeSpec{Out: f.out, Target: target, ContractFile: contractFile, Contract: policy, Options: o,
		Begin: func(rec *evidence.Run) {
			fmt.Fprintf(stdout, "gatehouse %s: intake gate %s against %s\n", rec.Harness, rec.ID, target)
		}})
	if err != nil {
		return err
	}
	var note strings.Builder
	dir, err := seal(ctx, f, signer, res.Folder, &note)
	if err != nil {
		return err
	}
	for _, r := range res.Results {
		fmt.Fprintf(stdout, "%-30s %-12s %s\n", r.Scenario, r.Verdict, evidence.Redact(r.Reason))
		if r.Verdict == evidence.Fail && len(r.Findings) > 0 {
			// The finding quotes the service's answer: each of its lines
			// redacted and escaped, indented under it.
			lines := strings.Split(r.Findings[len(r.Findings)-1], "\n")
			for i, l := range lines {
				lines[i] = evidence.Redact(l)
			}
			fmt.Fprintf(stdout, "    proved by: %s\n", strings.Join(lines, "\n    "))
		}
	}
	fmt.Fprintf(stdout, "\nevidence: %s\n%s", dir, note.String())
	return outcome(res.Results)
}

// startReference serves the reference service on 127.0.0.1 and returns
// its URL and a token command (this binary's "intake mint" with the
// minter's seed in a private temporary file).
func startReference(ctx context.Context) (stop func(), url, tokenCmd string, err error) {
	m, err := intake.NewMinter(intake.MinterOptions{})
	if err != nil {
		return nil, "", "", err
	}
	svc, err := intake.New(intake.Options{Key: m.PublicKey()})
	if err != nil {
		return nil, "", "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, "", "", fmt.Errorf("intake: reference token command: %w", err)
	}
	// The seed mints tokens: in the harness's own scratch folder, not the
	// shared /tmp.
	dir, release, err := scratch.New("intake")
	if err != nil {
		return nil, "", "", fmt.Errorf("intake: %w", err)
	}
	seed := filepath.Join(dir, "seed")
	if err := os.WriteFile(seed, []byte(hex.EncodeToString(m.Seed())+"\n"), 0o600); err != nil {
		release()
		return nil, "", "", fmt.Errorf("intake: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp4", "127.0.0.1:0")
	if err != nil {
		release()
		return nil, "", "", fmt.Errorf("intake: reference: %w", err)
	}
	srv := &http.Server{Handler: svc, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop = func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = release()
	}
	return stop, "http://" + ln.Addr().String(), exe + " intake mint --seed-file " + seed, nil
}

// runIntakeMint is the reference service's token command: it mints with
// the seed in --seed-file and prints the token.
func runIntakeMint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var seedFile string
	var sub intake.Subject
	var ttl time.Duration
	fl := newFlagSet(ctx, "intake mint")
	fl.SetOutput(stderr)
	fl.StringVar(&seedFile, "seed-file", "", "file holding the Ed25519 seed (hex)")
	fl.StringVar(&sub.Run, "run", "", "run")
	fl.StringVar(&sub.Report, "report", "", "report")
	fl.StringVar(&sub.Tenant, "tenant", "", "tenant")
	fl.DurationVar(&ttl, "ttl", 0, "lifetime (default one hour; negative: already expired)")
	shortFlags(fl)
	if err := fl.Parse(args); err != nil {
		return &usageError{err}
	}
	if seedFile == "" || sub.Run == "" || sub.Report == "" || sub.Tenant == "" {
		return usagef("intake mint: --seed-file, --run, --report and --tenant are required")
	}
	b, err := os.ReadFile(seedFile)
	if err != nil {
		return usagef("intake mint: %w", err)
	}
	seed, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return usagef("intake mint: %s does not hold a %d-byte hex seed", seedFile, ed25519.SeedSize)
	}
	m, err := intake.NewMinter(intake.MinterOptions{Key: ed25519.NewKeyFromSeed(seed)})
	if err != nil {
		return err
	}
	tok, err := m.Mint(sub, ttl)
	if err != nil {
		return usagef("intake mint: %w", err)
	}
	// The token is what this command is for: printed whole, past screen's
	// redaction.
	fmt.Fprintln(termsafe.Raw(stdout), tok)
	return nil
}
