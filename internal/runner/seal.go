package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
	htmlreport "github.com/gatehouse-dev/gatehouse/evidence/report"
)

// Sealer is what a run seals with: a cosign key or a keyless identity.
type Sealer interface {
	bundle.Signer
	Fingerprint() string // recorded in the index as the signer
	// SelfVerifier checks what this sealer signed: the index never records
	// a bundle that does not verify.
	SelfVerifier() (bundle.Verifier, error)
}

// KeySealer is a Sealer over a cosign private key.
type KeySealer struct{ *keys.Signer }

// LoadKey decrypts a cosign private key file (its password from
// COSIGN_PASSWORD, as with cosign).
func LoadKey(path string) (KeySealer, error) {
	k, err := keys.LoadSignerFile(path)
	if err != nil {
		return KeySealer{}, err
	}
	return KeySealer{k}, nil
}

// SelfVerifier verifies with the key's public half.
func (k KeySealer) SelfVerifier() (bundle.Verifier, error) {
	pub, err := k.GetPublicKeyPem()
	if err != nil {
		return nil, err
	}
	return keys.NewVerifier([]byte(pub))
}

// Seal finishes a complete run folder in the one safe order: report.html,
// then (with a sealer) SHA256SUMS and the signed attestations while the
// folder still has its partial name, then the rename. No folder ever
// carries a final name without its signature. s nil: the folder is left
// unsigned. It returns the folder's absolute final path.
func Seal(ctx context.Context, folder *evidence.Folder, s Sealer) (string, error) {
	if err := htmlreport.WriteFile(folder.Dir()); err != nil {
		dir := folder.Abandon()
		return "", fmt.Errorf("run: write %s in %s: %w", evidence.ReportFile, dir, err)
	}
	if s != nil {
		if err := bundle.Seal(ctx, folder.Dir(), s); err != nil {
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
	return dir, nil
}

// Keeping says where a run folder under its final name is kept besides:
// the index that records it and, optionally, an archive of it.
type Keeping struct {
	Sealer Sealer // what sealed it; nil: unsigned
	Index  string // the SQLite index (index.DefaultPath(out) by default)
	// ArchiveDir, when set, receives <ArchiveDir>/<folder name>.tar.gz.
	ArchiveDir string
}

// Kept is where a finished run is.
type Kept struct {
	Dir     string // the run folder, absolute, under its final name
	Archive string // its .tar.gz; "" when none was asked for
	Index   string // the index that records it
}

// ArchivePath is where Keep writes the archive of the run folder dir when
// asked to write it in archiveDir ("" for none).
func ArchivePath(archiveDir, dir string) string {
	if archiveDir == "" {
		return ""
	}
	return filepath.Join(archiveDir, filepath.Base(dir)+".tar.gz")
}

// Finish is the tail of every run: Seal, then Keep. Kept.Dir is set
// whenever the folder got its final name, also when keeping it failed.
func Finish(ctx context.Context, folder *evidence.Folder, k Keeping) (Kept, error) {
	dir, err := Seal(ctx, folder, k.Sealer)
	if err != nil {
		return Kept{Dir: dir}, err
	}
	return Keep(ctx, dir, k)
}

// Keep records a sealed (or unsigned) run folder: a signed bundle is
// verified again as its signer first (IndexRow), then the archive is
// written, then the row goes into the index.
func Keep(ctx context.Context, dir string, k Keeping) (Kept, error) {
	kept := Kept{Dir: dir}
	row, err := IndexRow(ctx, dir, k.Sealer)
	if err != nil {
		return kept, err
	}
	if tgz := ArchivePath(k.ArchiveDir, dir); tgz != "" {
		if err := WriteArchive(dir, tgz); err != nil {
			return kept, err
		}
		kept.Archive = tgz
	}
	ix, err := index.Open(ctx, k.Index)
	if err != nil {
		return kept, fmt.Errorf("run: evidence is in %s but could not be indexed: %w", dir, err)
	}
	defer ix.Close()
	if err := ix.Record(ctx, row); err != nil {
		return kept, fmt.Errorf("run: evidence is in %s but could not be indexed: %w", dir, err)
	}
	kept.Index = k.Index
	return kept, nil
}

// Index records a sealed (or unsigned) run folder in the SQLite index at
// db, as Keep does without an archive.
func Index(ctx context.Context, db, dir string, s Sealer) error {
	_, err := Keep(ctx, dir, Keeping{Sealer: s, Index: db})
	return err
}

// IndexRow re-verifies a signed bundle as its signer (the key's public half,
// or the certificate's exact identity against the trusted root), so the
// index never records a bundle that does not verify, and builds its row. An
// unsigned run is recorded with no key and no verification time.
func IndexRow(ctx context.Context, dir string, s Sealer) (index.Run, error) {
	if s == nil {
		in, err := htmlreport.Load(dir)
		if err != nil {
			return index.Run{}, fmt.Errorf("run: read back %s: %w", dir, err)
		}
		return index.FromRun(dir, in.Run, in.Results, summarize(in.Results), "", time.Time{}), nil
	}
	v, err := s.SelfVerifier()
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

// WriteArchive writes dir as a .tar.gz at path, through a temporary name.
func WriteArchive(dir, path string) error {
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
