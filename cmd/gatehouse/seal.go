package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gatehouse/evidence"
	"gatehouse/evidence/bundle"
	"gatehouse/evidence/index"
	"gatehouse/evidence/keyless"
	"gatehouse/evidence/keys"
	htmlreport "gatehouse/evidence/report"
)

// seal finishes a complete run folder in the one safe order: report.html,
// then (with a key or keyless) SHA256SUMS and the signed attestations while the folder
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
		fmt.Fprintf(note, "UNSIGNED: no --key or --keyless, so verify and gate will refuse it; recorded in %s\n", db)
	} else {
		fmt.Fprintf(note, "signed:   %s; recorded in %s\n", p.signer.Identity(), db)
	}
	return dir, nil
}

// indexRow re-verifies a signed bundle as its signer (the key's public half,
// or the certificate's exact identity against the trusted root), so the
// index never records a bundle that does not verify, and builds its row. An
// unsigned run is recorded with no key and no verification time.
func indexRow(ctx context.Context, dir string, s sealer) (index.Run, error) {
	if s == nil {
		in, err := htmlreport.Load(dir)
		if err != nil {
			return index.Run{}, fmt.Errorf("run: read back %s: %w", dir, err)
		}
		return index.FromRun(dir, in.Run, in.Results, summarize(in.Results), "", time.Time{}), nil
	}
	v, err := s.selfVerifier()
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

// sealer is what a run seals with: a cosign key or a keyless identity.
type sealer interface {
	bundle.Signer
	Fingerprint() string // recorded in the index as the signer
	selfVerifier() (bundle.Verifier, error)
}

type keySealer struct{ *keys.Signer }

func (k keySealer) selfVerifier() (bundle.Verifier, error) {
	pub, err := k.GetPublicKeyPem()
	if err != nil {
		return nil, err
	}
	return keys.NewVerifier([]byte(pub))
}

type keylessSealer struct{ *keyless.Signer }

func (k keylessSealer) selfVerifier() (bundle.Verifier, error) { return k.Verifier() }

// signFlags are run's keyless signing flags; --key is one of run's own.
type signFlags struct {
	keyless                                     bool
	tokenFile, fulcioURL, rekorURL, trustedRoot string
}

func (s *signFlags) register(fl *flag.FlagSet) {
	fl.BoolVar(&s.keyless, "keyless", false, "seal keylessly: ephemeral key, Fulcio certificate for the CI's OIDC token, Rekor entry (needs --trusted-root)")
	fl.StringVar(&s.tokenFile, "oidc-token-file", "", "keyless: file holding the OIDC identity token (default: $"+keyless.TokenEnv+")")
	fl.StringVar(&s.fulcioURL, "fulcio-url", keyless.DefaultFulcioURL, "keyless: Fulcio certificate authority")
	fl.StringVar(&s.rekorURL, "rekor-url", keyless.DefaultRekorURL, "keyless: Rekor transparency log")
	fl.StringVar(&s.trustedRoot, "trusted-root", "", "keyless: Sigstore trusted_root.json the sealed bundle must verify against")
}

// loadSealer prepares signing before the run starts, so a wrong password,
// a missing token or trusted root costs nothing: it decrypts the key (scrypt
// takes a moment), or checks a token is there and loads the trusted root.
// The keyless token is read again when sealing: CI may refresh it.
func loadSealer(key string, s signFlags) (sealer, error) {
	// Zero values are the defaults too: compare builds runFlags without
	// registering these flags.
	custom := func(v, def string) bool { return v != "" && v != def }
	set := s.tokenFile != "" || s.trustedRoot != "" ||
		custom(s.fulcioURL, keyless.DefaultFulcioURL) || custom(s.rekorURL, keyless.DefaultRekorURL)
	switch {
	case s.keyless && key != "":
		return nil, usagef("run: --key and --keyless are mutually exclusive")
	case !s.keyless && set:
		return nil, usagef("run: --oidc-token-file, --fulcio-url, --rekor-url and --trusted-root go with --keyless")
	case key != "":
		k, err := keys.LoadSignerFile(key)
		if err != nil {
			return nil, usagef("run: --key %s: %w", key, err)
		}
		return keySealer{k}, nil
	case !s.keyless:
		return nil, nil
	case s.trustedRoot == "":
		return nil, usagef("run: --keyless needs --trusted-root FILE (the Sigstore trusted_root.json the bundle must verify against)")
	}
	if _, err := keyless.Token(s.tokenFile)(); err != nil {
		return nil, usagef("run: --keyless: %w", err)
	}
	tr, err := keyless.LoadTrustedRoot(s.trustedRoot)
	if err != nil {
		return nil, usagef("run: --trusted-root: %w", err)
	}
	svc, err := keyless.PublicGood(keyless.Config{FulcioURL: s.fulcioURL, RekorURL: s.rekorURL, TokenFile: s.tokenFile})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	k, err := keyless.NewSigner(svc, tr)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return keylessSealer{k}, nil
}
