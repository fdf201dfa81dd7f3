package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gatehouse/evidence"
	"gatehouse/evidence/bundle"
	"gatehouse/evidence/index"
	"gatehouse/evidence/keys"
	htmlreport "gatehouse/evidence/report"
)

// seal finishes a complete run folder in the one safe order: report.html,
// then (with a key) SHA256SUMS and the signed attestations while the folder
// still has its partial name, then the rename. No folder ever carries a
// final name without its signature. Then the optional archive and the index
// record.
func seal(ctx context.Context, f runFlags, p *plan, folder *evidence.Folder, note io.Writer) (string, error) {
	if err := htmlreport.WriteFile(folder.Dir()); err != nil {
		dir := folder.Abandon()
		return "", fmt.Errorf("run: write %s in %s: %w", htmlreport.FileName, dir, err)
	}
	if p.signer != nil {
		if err := bundle.Seal(ctx, folder.Dir(), p.signer); err != nil {
			dir := folder.Abandon()
			return "", fmt.Errorf("run: seal %s: %w", dir, err)
		}
	}
	dir, err := folder.Finish()
	if err != nil {
		return "", err
	}
	// The index is read from other folders (gate, history): record where the
	// bundle is, not where it is from here.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	row, err := indexRow(ctx, dir, p.signer)
	if err != nil {
		return dir, err
	}
	if f.archive {
		tgz := filepath.Join(f.out, filepath.Base(dir)+".tar.gz")
		if err := writeArchive(dir, tgz); err != nil {
			return dir, err
		}
		fmt.Fprintf(note, "archive:  %s\n", tgz)
	}
	db := f.db
	if db == "" {
		db = index.DefaultPath(f.out)
	}
	ix, err := index.Open(ctx, db)
	if err != nil {
		return dir, fmt.Errorf("run: evidence is in %s but could not be indexed: %w", dir, err)
	}
	defer ix.Close()
	if err := ix.Record(ctx, row); err != nil {
		return dir, fmt.Errorf("run: evidence is in %s but could not be indexed: %w", dir, err)
	}
	if p.signer == nil {
		fmt.Fprintf(note, "UNSIGNED: no --key, so verify and gate will refuse it; recorded in %s\n", db)
	} else {
		fmt.Fprintf(note, "signed:   %s; recorded in %s\n", p.signer.Identity(), db)
	}
	return dir, nil
}

// indexRow re-verifies a signed bundle with the signer's own public key, so
// the index never records a bundle that does not verify, and builds its
// row. An unsigned run is recorded with no key and no verification time.
func indexRow(ctx context.Context, dir string, s *keys.Signer) (index.Run, error) {
	if s == nil {
		in, err := htmlreport.Load(dir)
		if err != nil {
			return index.Run{}, fmt.Errorf("run: read back %s: %w", dir, err)
		}
		return index.FromRun(dir, in.Run, in.Results, summarize(in.Results), "", time.Time{}), nil
	}
	pub, err := s.GetPublicKeyPem()
	if err != nil {
		return index.Run{}, fmt.Errorf("run: %w", err)
	}
	v, err := keys.NewVerifier([]byte(pub))
	if err != nil {
		return index.Run{}, fmt.Errorf("run: %w", err)
	}
	ver, err := bundle.Verify(ctx, dir, v)
	if err != nil {
		return index.Run{}, fmt.Errorf("run: the bundle just sealed in %s does not verify: %w", dir, err)
	}
	return index.FromRun(dir, ver.Run, ver.Results, ver.TestResult.Result, s.Fingerprint(), time.Now().UTC()), nil
}

// summarize is the test-result summary (as the signed attestation states
// it) for an unsigned run: FAILED, WARNED (anything not PASS, or nothing),
// or PASSED.
func summarize(rs []evidence.Result) string {
	out := "PASSED"
	if len(rs) == 0 {
		out = "WARNED"
	}
	for _, r := range rs {
		switch {
		case r.Verdict == evidence.Fail:
			return "FAILED"
		case r.Verdict != evidence.Pass:
			out = "WARNED"
		}
	}
	return out
}

// writeArchive writes dir as a .tar.gz next to it, through a temporary name.
func writeArchive(dir, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".archive-*")
	if err != nil {
		return fmt.Errorf("run: archive: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := bundle.Archive(dir, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("run: archive: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("run: archive: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("run: archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("run: archive: %w", err)
	}
	return nil
}
