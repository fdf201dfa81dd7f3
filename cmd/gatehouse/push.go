package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/ocistore"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
)

const pushHelp = `Usage: gatehouse push --to DIR|oci-layout:DIR [--image DIGEST] RUN_FOLDER_OR_ARCHIVE

Stores a sealed evidence bundle (a signed run folder, archived on the fly, or
its .tar.gz) as an OCI artifact in an OCI image layout on disk: artifactType
` + ocistore.ArtifactType + `, the archive as its one layer,
annotations with the run id, policy digest and SHA256SUMS digest, and a
subject naming the sandbox image (run.json's image digest, or --image). The
layout is created when missing; pushing the same bundle twice stores it once.
It prints the reference to fetch it back with:

  gatehouse verify --from oci-layout:DIR@sha256:... --key cosign.pub

Only OCI image layouts on disk: there is no registry client (copy the layout
to a registry with a tool of your choice, e.g. 'oras cp' or 'crane').
Unsigned or unfinished runs are refused: nobody could verify them.

Example:
  gatehouse push --to oci-layout:evidence gatehouse-runs/20261130T105520Z-95008d.tar.gz

Exit codes: 0 stored, 1 refused (not a sealed bundle), 2 usage.

Flags:
`

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := newFlagSet(ctx, "push")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, pushHelp); fl.PrintDefaults() }
	to := fl.String("to", "", "OCI image layout to store into: DIR or oci-layout:DIR (required)")
	image := fl.String("image", "", "sandbox image digest (sha256:...) the artifact refers to (default: the run's)")
	pos, err := parseArgs(fl, args)
	if err != nil {
		return err
	}
	if *to == "" {
		return usagef("push: --to DIR|oci-layout:DIR is required")
	}
	if len(pos) != 1 {
		return usagef("push: want exactly one RUN_FOLDER_OR_ARCHIVE, got %d", len(pos))
	}
	ref, err := ocistore.ParseRef(*to, true)
	if err != nil {
		return usagef("push: --to: %w", err)
	}
	if ref.Digest != "" {
		return usagef("push: --to %s: a layout to push into has no @DIGEST", *to)
	}
	src := pos[0]
	st, err := os.Stat(src)
	if err != nil {
		return usagef("push: %w", err)
	}
	archive := src
	if st.IsDir() {
		tmp, release, err := scratch.New("push")
		if err != nil {
			return err
		}
		defer release()
		archive = filepath.Join(tmp, filepath.Base(filepath.Clean(src))+".tar.gz")
		f, err := os.Create(archive)
		if err != nil {
			return err
		}
		if err := bundle.Archive(src, f); err != nil {
			f.Close()
			return refusedf("push: %s: %w", src, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	p, err := ocistore.Push(ctx, ref.Dir, archive, *image)
	switch {
	case errors.Is(err, ocistore.ErrNotSealed), errors.Is(err, ocistore.ErrMalformed),
		errors.Is(err, bundle.ErrMalformed), errors.Is(err, bundle.ErrUnsafePath), errors.Is(err, bundle.ErrTooLarge):
		return refusedf("push: refused: %s: %w", src, err)
	case err != nil:
		return fmt.Errorf("push: %w", err) // ocistore.ErrRef: a usage error (exitTable)
	}
	fmt.Fprintf(stdout, "pushed:   %s\n", p.Ref)
	fmt.Fprintf(stdout, "  run %s, policy %s, SHA256SUMS %s\n", p.RunID,
		p.Annotations[ocistore.AnnotPolicyDigest], p.Annotations[ocistore.AnnotSumsDigest])
	fmt.Fprintf(stdout, "  archive layer %s\n", p.Archive)
	if p.Subject != "" {
		fmt.Fprintf(stdout, "  subject (sandbox image) %s\n", p.Subject)
	}
	return nil
}

// verifyFrom fetches the evidence artifact ref names out of an OCI image
// layout, verifies its archive exactly as verify does a .tar.gz, and checks
// the artifact's (unsigned) labels against the (signed) bundle.
func verifyFrom(ctx context.Context, from string, v bundle.Verifier) (*bundle.Verified, error) {
	ref, err := ocistore.ParseRef(from, false)
	if err != nil {
		return nil, usagef("verify: --from: %w", err)
	}
	tmp, release, err := scratch.New("fetch")
	if err != nil {
		return nil, err
	}
	defer release()
	fe, err := ocistore.Fetch(ctx, ref, tmp)
	if errors.Is(err, ocistore.ErrAmbiguous) {
		return nil, &usageError{fmt.Errorf("verify: --from: %w", err)}
	}
	if err != nil {
		return nil, err
	}
	ver, err := verifyBundle(ctx, fe.Archive, v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(bundle.FormatSums(ver.Files))
	if err := fe.CheckLabels(ver.Run, "sha256:"+hex.EncodeToString(sum[:])); err != nil {
		return nil, err
	}
	ver.Dir = fe.Ref.String()
	return ver, nil
}

// isUsage says whether err is already a usage error (verify maps the rest
// of verifyFrom's failures to "not verified").
func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue)
}
