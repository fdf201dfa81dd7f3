package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/keyless"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
	htmlreport "github.com/gatehouse-dev/gatehouse/evidence/report"
)

const verifyHelp = `Usage: gatehouse verify BUNDLE --key cosign.pub
       gatehouse verify BUNDLE --certificate-identity ID --certificate-oidc-issuer URL
                               --trusted-root trusted_root.json
       gatehouse verify --from oci-layout:DIR[@sha256:DIGEST] (--key ... | keyless flags)

Verifies an evidence bundle (a run folder or its .tar.gz) fully offline: both
signatures, that the signed statements name every file, that every file's
bytes match them and SHA256SUMS, that no file is missing or added, and that
the policy digest is the digest of the recorded policy files. Then it prints
what was tested, each gate's verdict on each path, and what the evidence
does NOT prove.

A run made without --key is UNSIGNED and is refused; so is a runner's
unfinished ".<id>.partial" folder. Verifying says the evidence is intact and
who sealed it, not that the gates passed: read the verdict table.

The same bundle verifies with the real cosign CLI (it checks the signature and
one file's digest; this command checks everything):
  cosign trusted-root create --out tr.json
  cosign verify-blob-attestation --key cosign.pub --insecure-ignore-tlog --trusted-root tr.json \
    --bundle RUN/attestations/test-result.sigstore.json \
    --type https://in-toto.io/attestation/test-result/v0.1 RUN/run.json

A keyless bundle (sealed with 'run --keyless') verifies, still offline,
against a Sigstore trusted root file: the certificate must chain to its
Fulcio CA and name exactly the given identity and OIDC issuer, the signature
must be in its Rekor log, and the log's time must fall inside the
certificate's validity (and, when the root lists CT logs, the certificate
must carry an SCT). --key and the keyless flags are mutually exclusive.

--from fetches the bundle from an OCI image layout on disk (stored there by
'gatehouse push'): every blob is checked against its digest, the archive is
verified exactly as a .tar.gz is, and the artifact's labels (run id, policy
digest, SHA256SUMS digest, image) must agree with the signed bundle. Without
@DIGEST the layout must hold exactly one evidence artifact.

Example:
  gatehouse verify gatehouse-runs/20261130T105520Z-95008d.tar.gz --key cosign.pub
  gatehouse verify --from oci-layout:evidence@sha256:4c1d... --key cosign.pub
  gatehouse verify RUN --trusted-root trusted_root.json \
    --certificate-identity https://github.com/ORG/REPO/.github/workflows/ci.yml@refs/heads/main \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com

Exit codes: 0 verified, 1 not verified (the message names the file and
field), 2 usage.

Flags:
`

type verifyFlags struct {
	key, identity, issuer, trustedRoot string
	keyless                            bool
}

// register adds the signer flags verify and gate share.
func (f *verifyFlags) register(fl *flag.FlagSet, keyUsage string) {
	fl.StringVar(&f.key, "key", "", keyUsage)
	fl.BoolVar(&f.keyless, "keyless", false, "require a keyless signature (implied by the flags below)")
	fl.StringVar(&f.identity, "certificate-identity", "", "keyless: the certificate identity (SAN) to require, exactly")
	fl.StringVar(&f.issuer, "certificate-oidc-issuer", "", "keyless: the OIDC issuer to require, exactly")
	fl.StringVar(&f.trustedRoot, "trusted-root", "", "keyless: Sigstore trusted_root.json to verify against (offline)")
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f verifyFlags
	fl := newFlagSet(ctx, "verify")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, verifyHelp); fl.PrintDefaults() }
	f.register(fl, "cosign public key (cosign.pub) the bundle must be signed with")
	output := outputFlag(fl)
	from := fl.String("from", "", "fetch the bundle from an OCI image layout: oci-layout:DIR[@sha256:DIGEST] (see 'gatehouse push')")
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if err := checkOutput("verify", *output); err != nil {
		return err
	}
	switch {
	case *from != "" && len(pos) != 0:
		return usagef("verify: --from and a BUNDLE argument are mutually exclusive")
	case *from == "" && len(pos) != 1:
		return usagef("verify: want exactly one BUNDLE (a run folder or .tar.gz) or --from oci-layout:DIR, got %d", len(pos))
	}
	v, err := loadVerifier(f)
	if err != nil {
		return err
	}
	var ver *bundle.Verified
	name := *from
	if *from != "" {
		ver, err = verifyFrom(ctx, *from, v)
		if isUsage(err) {
			return err
		}
	} else {
		name = pos[0]
		ver, err = verifyBundle(ctx, pos[0], v)
	}
	if *output == "json" {
		if werr := writeJSON(stdout, verifiedDoc(name, ver, err)); werr != nil {
			return werr
		}
	}
	if err != nil {
		return refusedf("NOT VERIFIED: %s", explain(err))
	}
	if *output == "text" {
		printVerified(stdout, ver)
	}
	return nil
}

// parseArgs parses flags wherever they are among the arguments (the flag
// package stops at the first positional one) and returns the positionals.
func parseArgs(fl *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	shortFlags(fl)
	for {
		if err := fl.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err // help printed: exit 0
			}
			return nil, &usageError{err}
		}
		if fl.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fl.Arg(0))
		args = fl.Args()[1:]
	}
}

// loadVerifier builds the key or the keyless verifier for verify (and diff).
func loadVerifier(f verifyFlags) (bundle.Verifier, error) { return loadVerifierFor("verify", f) }

// loadVerifierFor is loadVerifier with verb prefixing the usage errors.
func loadVerifierFor(verb string, f verifyFlags) (bundle.Verifier, error) {
	kl := f.keyless || f.identity != "" || f.issuer != "" || f.trustedRoot != ""
	switch {
	case f.key != "" && kl:
		return nil, usagef("%s: --key and keyless verification (--keyless, --certificate-identity, --certificate-oidc-issuer, --trusted-root) are mutually exclusive", verb)
	case kl:
		return loadKeylessVerifier(verb, f)
	case f.key == "":
		return nil, usagef("%s: --key cosign.pub is required (or, for a keyless bundle, --certificate-identity, --certificate-oidc-issuer and --trusted-root)", verb)
	}
	v, err := keys.LoadVerifierFile(f.key)
	if err != nil {
		return nil, usagef("%s: --key %s: %w", verb, f.key, err)
	}
	return v, nil
}

func loadKeylessVerifier(verb string, f verifyFlags) (bundle.Verifier, error) {
	var missing []string
	for _, m := range []struct{ flag, val string }{{"--certificate-identity", f.identity},
		{"--certificate-oidc-issuer", f.issuer}, {"--trusted-root", f.trustedRoot}} {
		if m.val == "" {
			missing = append(missing, m.flag)
		}
	}
	if len(missing) > 0 {
		return nil, usagef("%s: keyless verification needs %s (we never fetch a trusted root or guess an identity)", verb, strings.Join(missing, ", "))
	}
	tr, err := keyless.LoadTrustedRoot(f.trustedRoot)
	if err != nil {
		return nil, usagef("%s: --trusted-root: %w", verb, err)
	}
	v, err := keyless.NewVerifier(tr, f.identity, f.issuer)
	if err != nil {
		return nil, usagef("%s: %w", verb, err)
	}
	return v, nil
}

// verifyBundle verifies a folder or archive, and that the signed policy
// digest really is the digest of the signed policy files.
func verifyBundle(ctx context.Context, path string, v bundle.Verifier) (*bundle.Verified, error) {
	var ver *bundle.Verified
	var err error
	if strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz") {
		ver, err = bundle.VerifyArchive(ctx, path, v)
	} else {
		ver, err = bundle.Verify(ctx, path, v)
	}
	if err != nil {
		return nil, err
	}
	if got := evidence.PolicyDigest(ver.Run.PolicyFiles); got != ver.Run.PolicyDigest {
		return nil, &bundle.Error{Kind: bundle.ErrDigest, File: evidence.RunFile, Field: "policy_digest",
			Err: fmt.Errorf("says %s, but the recorded policy files digest to %s", ver.Run.PolicyDigest, got)}
	}
	return ver, nil
}

// explain adds what to do to the bundle error, which already names the
// file and field.
func explain(err error) string {
	switch {
	case errors.Is(err, bundle.ErrUnsigned):
		return err.Error() + " (this run was made without --key: it is UNSIGNED evidence)"
	case errors.Is(err, bundle.ErrPartial), errors.Is(err, bundle.ErrIncomplete):
		return err.Error() + " (the run did not finish: its evidence proves nothing)"
	case errors.Is(err, bundle.ErrUnsafePath), errors.Is(err, bundle.ErrTooLarge):
		return "evidence refused: " + err.Error() + " (only regular files within the size limits are read; nothing was followed, and no FIFO or device was opened)"
	}
	return err.Error()
}

func printVerified(w io.Writer, v *bundle.Verified) {
	r := v.Run
	fmt.Fprintf(w, "VERIFIED: %s\n  signed by %s; %d evidence files re-hashed, all match SHA256SUMS and both signed statements\n",
		v.Dir, v.Signer, len(v.Files))
	fmt.Fprintln(w, "\nWhat was tested")
	// run.json and results.json are whoever wrote the bundle's: every value
	// printed redacted and escaped, on its line.
	line := func(k, val string) { fmt.Fprintf(w, "  %-16s %s\n", k+":", evidence.Redact(val)) }
	line("target", r.Target)
	line("profile", fmt.Sprintf("%s (%s)", r.Profile, r.ProfileFile))
	line("image digest", orNone(r.ImageDigest, "none (not an image-based target)"))
	line("policy digest", fmt.Sprintf("%s (matches the %d policy files in the bundle)", r.PolicyDigest, len(r.PolicyFiles)))
	line("model", orNone(r.Model, "not recorded"))
	line("agent", orNone(r.Agent, "not recorded"))
	line("corpus", r.Corpus)
	line("harness version", r.Harness)
	line("commit", orNone(r.Commit, "not recorded"))
	line("pipeline", orNone(r.Pipeline, "not recorded"))
	line("run", fmt.Sprintf("%s, %s to %s, seed %d", r.ID, r.Start.Format("2006-01-02 15:04:05Z07:00"), r.End.Format("15:04:05Z07:00"), r.Seed))
	line("test-result", v.TestResult.Result)

	fmt.Fprintf(w, "\n  %-20s %-13s %-12s %-8s %s\n", "GATE", "PATH", "VERDICT", "CONTROL", "WHY")
	rs := append([]evidence.Result(nil), v.Results...)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Gate != rs[j].Gate {
			return rs[i].Gate < rs[j].Gate
		}
		return rs[i].Path > rs[j].Path
	})
	for _, x := range rs {
		ctl := "no"
		if x.Control {
			ctl = "worked"
		}
		fmt.Fprintf(w, "  %-20s %-13s %-12s %-8s %s\n", evidence.Redact(x.Gate), evidence.Redact(x.Path), evidence.Redact(string(x.Verdict)), ctl, redact(x.Reason))
	}
	if len(rs) == 0 {
		fmt.Fprintln(w, "  (no results: nothing was tested, so nothing passed)")
	}
	fmt.Fprintln(w, "\nWhat this does NOT prove")
	for _, s := range htmlreport.NotProven(r) {
		fmt.Fprintf(w, "  - %s\n", evidence.Redact(s)) // it names run.json's values
	}
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
