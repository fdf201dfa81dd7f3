package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/index"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/internal/runner"
)

// seal finishes a complete run folder through runner.Finish (report.html,
// with a signer SHA256SUMS and the signed attestations, the rename, the
// signed bundle verified again, the optional archive, the index record)
// and says on note what that did.
func seal(ctx context.Context, f runFlags, signer sealer, folder *evidence.Folder, note io.Writer) (string, error) {
	kept, err := runner.Finish(ctx, folder, keeping(f, signer))
	if err != nil {
		return kept.Dir, err
	}
	if kept.Archive != "" {
		fmt.Fprintf(note, "archive:  %s\n", kept.Archive)
	}
	if signer == nil {
		fmt.Fprintf(note, "UNSIGNED: no --key or --keyless, so verify and gate will refuse it; recorded in %s\n", kept.Index)
		fmt.Fprintf(note, "          seal it in a job that runs no sandbox: gatehouse seal --key cosign.key %s\n", kept.Dir)
	} else {
		fmt.Fprintf(note, "signed:   %s; recorded in %s\n", signer.Identity(), kept.Index)
	}
	return kept.Dir, nil
}

// keeping is where --out, --db and --archive say a sealed run is kept.
func keeping(f runFlags, signer sealer) runner.Keeping {
	k := runner.Keeping{Sealer: signer, Index: indexPath(f)}
	if f.archive {
		k.ArchiveDir = f.out
	}
	return k
}

// indexPath is the SQLite index a run is recorded in.
func indexPath(f runFlags) string {
	if f.db != "" {
		return f.db
	}
	return index.DefaultPath(f.out)
}

// archivePath is where --archive writes the run's tar.gz ("" without it).
func archivePath(f runFlags, dir string) string {
	return runner.ArchivePath(keeping(f, nil).ArchiveDir, dir)
}

// sealer is what a run seals with: a cosign key or a keyless identity.
type sealer = runner.Sealer

type keylessSealer struct{ *keyless.Signer }

func (k keylessSealer) SelfVerifier() (bundle.Verifier, error) { return k.Verifier() }

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

// sealerOnce loads the signer once for every run of one command (compare
// runs several): the key's password leaves the environment at the first
// load. nil: load each time.
type sealerOnce struct {
	done bool
	s    sealer
	err  error
}

func (o *sealerOnce) load(verb, key string, s signFlags) (sealer, error) {
	if o == nil {
		return loadSealer(verb, key, s)
	}
	if !o.done {
		o.s, o.err = loadSealer(verb, key, s)
		o.done = true
	}
	return o.s, o.err
}

// loadSealer prepares signing before the run starts, so a wrong password,
// a missing token or trusted root costs nothing: it decrypts the key (scrypt
// takes a moment; COSIGN_PASSWORD leaves the process then), or checks a
// token is there and loads the trusted root. The keyless token is read
// again when sealing: CI may refresh it.
func loadSealer(verb, key string, s signFlags) (sealer, error) {
	// Zero values are the defaults too: compare builds runFlags without
	// registering these flags.
	custom := func(v, def string) bool { return v != "" && v != def }
	set := s.tokenFile != "" || s.trustedRoot != "" ||
		custom(s.fulcioURL, keyless.DefaultFulcioURL) || custom(s.rekorURL, keyless.DefaultRekorURL)
	switch {
	case s.keyless && key != "":
		return nil, usagef("%s: --key and --keyless are mutually exclusive", verb)
	case !s.keyless && set:
		return nil, usagef("%s: --oidc-token-file, --fulcio-url, --rekor-url and --trusted-root go with --keyless", verb)
	case key != "":
		k, err := runner.LoadKey(key)
		if err != nil {
			return nil, usagef("%s: --key %s: %w", verb, key, err)
		}
		return k, nil
	case !s.keyless:
		return nil, nil
	case s.trustedRoot == "":
		return nil, usagef("%s: --keyless needs --trusted-root FILE (the Sigstore trusted_root.json the bundle must verify against)", verb)
	}
	if _, err := keyless.Token(s.tokenFile)(); err != nil {
		return nil, usagef("%s: --keyless: %w", verb, err)
	}
	tr, err := keyless.LoadTrustedRoot(s.trustedRoot)
	if err != nil {
		return nil, usagef("%s: --trusted-root: %w", verb, err)
	}
	svc, err := keyless.PublicGood(keyless.Config{FulcioURL: s.fulcioURL, RekorURL: s.rekorURL, TokenFile: s.tokenFile})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", verb, err)
	}
	k, err := keyless.NewSigner(svc, tr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", verb, err)
	}
	return keylessSealer{k}, nil
}
