package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

const sealHelp = `Usage: gatehouse seal (--key cosign.key | --keyless --trusted-root FILE ...)
                      [--out DIR] [--db PATH] [--archive] RUN_FOLDER...

Seals run folders that 'gatehouse run' (or rehearse, or compare) left
UNSIGNED, in a process that runs no sandbox. It is how the evidence of a
profile that puts the host within the guest's reach gets signed: a leaky
profile, or a wrapper started as root on the host's file system. 'run
--key' refuses such a profile, because a guest that reaches the host reads
the signing process's key and its password (COSIGN_PASSWORD). Run it
without a key on a disposable runner, carry the run folder to a separate
job, and seal it there:

  # job 1, a disposable runner: no key, no password in its environment
  gatehouse run --profile targets/profiles/bwrap-leaky.yaml --out unsigned
  # job 2, another runner: the key, and no sandbox
  COSIGN_PASSWORD=... gatehouse seal --key cosign.key --out gatehouse-runs unsigned/*/

Each folder is read as hostile, since it comes from a runner a guest could
reach, and is refused (exit 1, nothing signed, the folder left as it was)
unless it is a finished run folder (named for its run, run.json complete),
not sealed yet (no SHA256SUMS or attestations/), and holds only folders
and regular files of one file system: a symlink, a FIFO, a device, a hard
link, more than 100,000 files or 4 GiB are refused. What is signed is a
fresh copy: report.html is written again from run.json and results.json,
then SHA256SUMS and the signed attestations are added, and the copy gets
the run's name under --out (default: the folder's own parent, where it
replaces the unsigned folder). The sealed run is verified as its signer
and recorded in the index (default <out>/gatehouse-index.db, which must not
exist yet: an index next to downloaded folders may be the runner's, so an
existing one is only opened when named with --db); --archive also writes
<out>/<id>.tar.gz. 'gatehouse verify' and 'gatehouse gate' then accept it
as a run sealed by 'run --key'.

A seal says who vouches for the files, not that the runner was untouched:
a guest that reached the host could also have changed the evidence before
it left. Give each such run a runner of its own, thrown away after it.

Exit codes: 0 every folder sealed, 1 a folder refused, 2 usage (flags, the
key or its password, a folder that is not there), 3 sealing failed.

Flags:
`

func runSeal(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f runFlags
	fl := newFlagSet(ctx, "seal")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, sealHelp); fl.PrintDefaults() }
	fl.StringVar(&f.key, "key", "", "cosign private key to seal with (password from COSIGN_PASSWORD, which leaves the process once read)")
	f.signing.register(fl)
	fl.StringVar(&f.out, "out", "", "folder that receives the sealed run folders (default: each folder's own parent, in place)")
	fl.StringVar(&f.db, "db", "", "SQLite index to record the sealed runs in (default <out>/"+index.DefaultName+")")
	fl.BoolVar(&f.archive, "archive", false, "also write <out>/<id>.tar.gz of each sealed folder")
	dirs, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return usagef("seal: name the run folders to seal, e.g. gatehouse seal --key cosign.key gatehouse-runs/20260102T030405Z-ab12")
	}
	if f.key == "" && !f.signing.keyless {
		return usagef("seal: give --key cosign.key (or --keyless): sealing is signing")
	}
	for _, d := range dirs {
		st, err := os.Lstat(d)
		if err != nil {
			return usagef("seal: %w", err)
		}
		if !st.IsDir() {
			return fmt.Errorf("seal: %s: %w: not a folder (a link or a file)", d, runner.ErrNotSealable)
		}
	}
	if err := checkSealIndex(f, dirs); err != nil {
		return err
	}
	s, err := loadSealer("seal", f.key, f.signing)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := sealOne(ctx, f, d, s, stdout); err != nil {
			return err
		}
	}
	return nil
}

// checkSealIndex refuses, before anything is signed, a default index that
// already exists: next to downloaded run folders it may have come from the
// runner with them, and a hostile SQLite file is not opened by a process
// that holds the key. An index the seal job owns is named with --db.
func checkSealIndex(f runFlags, dirs []string) error {
	if f.db != "" {
		return nil
	}
	for _, d := range dirs {
		out := f.out
		if out == "" {
			out = filepath.Dir(filepath.Clean(d))
		}
		db := index.DefaultPath(out)
		if _, err := os.Lstat(db); err == nil {
			return usagef("seal: %s already exists and may have come from the runner with the run folders: name the index this job owns with --db", db)
		}
	}
	return nil
}

// sealOne seals one folder, then keeps it as a run's is (runner.Keep:
// verified again, archived, indexed).
func sealOne(ctx context.Context, f runFlags, src string, s sealer, stdout io.Writer) error {
	out := f.out
	if out == "" {
		out = filepath.Dir(filepath.Clean(src))
	}
	abs, _ := filepath.Abs(src)
	if final, _ := filepath.Abs(filepath.Join(out, filepath.Base(abs))); final != abs {
		if _, err := os.Lstat(final); err == nil {
			return usagef("seal: %s already exists", final)
		}
	}
	dir, err := runner.SealFolder(ctx, src, out, s)
	if err != nil { // runner.ErrNotSealable: refused (exitTable)
		return err
	}
	fmt.Fprintf(stdout, "sealed:   %s\n", dir)
	g := f
	g.out = out
	kept, err := runner.Keep(ctx, dir, keeping(g, s))
	if kept.Archive != "" {
		fmt.Fprintf(stdout, "archive:  %s\n", kept.Archive)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "signed:   %s; recorded in %s\n", s.Identity(), kept.Index)
	return nil
}
