// Package ocistore keeps sealed evidence bundles (the run folder's .tar.gz)
// as OCI artifacts in an OCI image layout on disk, and fetches them back.
//
// The layout is storage, not trust: nothing read from it is believed until
// the bundle's own signatures verify (the caller does that with
// bundle.VerifyArchive). Fetch still checks every blob against its digest and
// the manifest's labels against the bundle, so a tampered layout is named as
// such instead of surfacing later as a puzzling signature error.
//
// One artifact is an OCI 1.1 image manifest: artifactType ArtifactType, the
// empty config, one layer (the archive, LayerMediaType), annotations with the
// run id, policy digest and SHA256SUMS digest, and a subject naming the
// sandbox image when there is one.
package ocistore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
)

// Media types and annotation keys of an evidence artifact.
const (
	ArtifactType   = "application/vnd.gatehouse.evidence.v1+tar.gz"
	LayerMediaType = "application/vnd.gatehouse.evidence.bundle.v1.tar+gzip"
	emptyMediaType = "application/vnd.oci.empty.v1+json"

	AnnotRunID        = "dev.gatehouse.run.id"
	AnnotPolicyDigest = "dev.gatehouse.policy.digest"
	AnnotSumsDigest   = "dev.gatehouse.sha256sums.digest"
	AnnotImageDigest  = "dev.gatehouse.image.digest"
	AnnotProfile      = "dev.gatehouse.profile"
	AnnotTarget       = "dev.gatehouse.target"
	annotCreated      = "org.opencontainers.image.created"
	annotTitle        = "org.opencontainers.image.title"
	annotRefName      = "org.opencontainers.image.ref.name"
)

// Scheme prefixes a layout reference: oci-layout:DIR[@sha256:HEX].
const Scheme = "oci-layout:"

// Kinds of failure. errors.Is(err, ocistore.ErrRef) etc.
var (
	ErrRef       = errors.New("bad reference")          // the caller's mistake
	ErrNotFound  = errors.New("no such evidence")       // layout or artifact missing
	ErrAmbiguous = errors.New("ambiguous reference")    // several artifacts, no digest
	ErrTampered  = errors.New("layout does not match")  // a blob or label is not what it claims
	ErrNotSealed = errors.New("bundle is not sealed")   // nothing signed to push
	ErrMalformed = errors.New("malformed OCI artifact") // not one of ours
)

// Error names the kind and the blob or file concerned.
type Error struct {
	Kind error
	What string // blob digest, file or field; may be ""
	Err  error  // may be nil
}

func (e *Error) Error() string {
	s := "oci: " + e.Kind.Error()
	if e.What != "" {
		s += ": " + e.What
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Is(target error) bool { return target == e.Kind }
func (e *Error) Unwrap() error        { return e.Err }

func errf(kind error, what, format string, a ...any) error {
	return &Error{Kind: kind, What: what, Err: fmt.Errorf(format, a...)}
}

// Ref is a parsed oci-layout reference.
type Ref struct {
	Dir    string
	Digest string // "" or sha256:<64 hex>
}

func (r Ref) String() string {
	if r.Digest == "" {
		return Scheme + r.Dir
	}
	return Scheme + r.Dir + "@" + r.Digest
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ParseRef reads "oci-layout:DIR[@sha256:HEX]"; with bare true a plain DIR
// (push's --to) is accepted too. Any other scheme ("docker://", "oci:",
// "registry.example/x") is refused: there is no registry client here.
func ParseRef(s string, bare bool) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		if !bare || strings.Contains(s, "://") {
			return Ref{}, errf(ErrRef, s, "want %sDIR[@sha256:HEX] (only OCI image layouts on disk; no registry)", Scheme)
		}
	}
	var r Ref
	r.Dir = rest
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		r.Dir, r.Digest = rest[:i], rest[i+1:]
		if !digestRE.MatchString(r.Digest) {
			return Ref{}, errf(ErrRef, s, "digest %q is not sha256:<64 lowercase hex>", r.Digest)
		}
	}
	if r.Dir == "" {
		return Ref{}, errf(ErrRef, s, "no layout folder")
	}
	return r, nil
}

// Pushed is what Push stored.
type Pushed struct {
	Ref         Ref    // the layout and the manifest digest
	Archive     string // the archive's digest
	RunID       string
	Annotations map[string]string
	Subject     string // the image digest the subject names, or ""
}

// Push stores the sealed bundle archive at archivePath in the OCI image
// layout dir (created when missing). image, when not "", is the sandbox
// image digest the artifact refers to; it must agree with run.json's.
func Push(ctx context.Context, dir, archivePath, image string) (*Pushed, error) {
	if image != "" && !digestRE.MatchString(image) {
		return nil, errf(ErrRef, image, "--image must be sha256:<64 lowercase hex>")
	}
	run, sums, err := inspectArchive(ctx, archivePath)
	if err != nil {
		return nil, err
	}
	switch {
	case image == "":
		image = run.ImageDigest
	case run.ImageDigest != "" && run.ImageDigest != image:
		return nil, errf(ErrRef, image, "the evidence was taken on image %s", run.ImageDigest)
	}
	lp, err := openOrCreate(dir)
	if err != nil {
		return nil, err
	}
	layer, err := writeBlobFile(lp, archivePath)
	if err != nil {
		return nil, err
	}
	layer.MediaType = LayerMediaType
	layer.Annotations = map[string]string{annotTitle: run.ID + ".tar.gz"}
	cfg, err := writeBlobBytes(lp, []byte("{}"))
	if err != nil {
		return nil, err
	}
	cfg.MediaType = emptyMediaType
	ann := map[string]string{
		AnnotRunID:        run.ID,
		AnnotPolicyDigest: run.PolicyDigest,
		AnnotSumsDigest:   sums,
		AnnotProfile:      run.Profile,
		AnnotTarget:       run.Target,
		annotCreated:      run.End.UTC().Format(time.RFC3339),
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: ArtifactType,
		Config: cfg, Layers: []v1.Descriptor{layer}, Annotations: ann}
	if image != "" {
		ann[AnnotImageDigest] = image
		h, _ := v1.NewHash(image) // checked by digestRE
		// The manifest's size is not known to us: the evidence records the
		// digest only. Referrers lookups go by digest.
		m.Subject = &v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: h}
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	md, err := writeBlobBytes(lp, mb)
	if err != nil {
		return nil, err
	}
	md.MediaType, md.ArtifactType = types.OCIManifestSchema1, ArtifactType
	md.Annotations = map[string]string{annotRefName: run.ID, AnnotRunID: run.ID}
	// Pushing the same bundle twice gives the same manifest: one entry.
	if idx, err := readIndex(lp); err == nil {
		for _, d := range idx.Manifests {
			if d.Digest == md.Digest {
				return pushed(dir, md, layer, run, ann, image), nil
			}
		}
	}
	if err := lp.AppendDescriptor(md); err != nil {
		return nil, fmt.Errorf("oci: %s: %w", dir, err)
	}
	return pushed(dir, md, layer, run, ann, image), nil
}

func pushed(dir string, md, layer v1.Descriptor, run evidence.Run, ann map[string]string, image string) *Pushed {
	return &Pushed{Ref: Ref{Dir: dir, Digest: md.Digest.String()}, Archive: layer.Digest.String(),
		RunID: run.ID, Annotations: ann, Subject: image}
}

// inspectArchive extracts the archive (with bundle's limits and path
// checks) to read run.json and the SHA256SUMS digest. It refuses what is not
// a finished, sealed bundle: pushing evidence nobody can verify is a mistake.
// Signatures are verified by whoever fetches it.
func inspectArchive(ctx context.Context, path string) (evidence.Run, string, error) {
	var run evidence.Run
	f, err := os.Open(path)
	if err != nil {
		return run, "", &Error{Kind: ErrNotFound, What: path, Err: err}
	}
	defer f.Close()
	tmp, release, err := scratch.New("push")
	if err != nil {
		return run, "", err
	}
	defer release()
	dir, err := bundle.Extract(ctx, f, tmp, bundle.DefaultLimits)
	if err != nil {
		return run, "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, evidence.RunFile))
	if err != nil {
		return run, "", &Error{Kind: ErrNotSealed, What: evidence.RunFile, Err: err}
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return run, "", &Error{Kind: ErrMalformed, What: evidence.RunFile, Err: err}
	}
	if !run.Complete || run.ID == "" {
		return run, "", errf(ErrNotSealed, evidence.RunFile, "the run did not finish")
	}
	sums, err := os.ReadFile(filepath.Join(dir, bundle.SumsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return run, "", errf(ErrNotSealed, bundle.SumsFile, "the run was made without --key or --keyless: UNSIGNED")
	}
	if err != nil {
		return run, "", err
	}
	if ents, err := os.ReadDir(filepath.Join(dir, bundle.AttestDir)); err != nil || len(ents) == 0 {
		return run, "", errf(ErrNotSealed, bundle.AttestDir, "no attestations")
	}
	sum := sha256.Sum256(sums)
	return run, "sha256:" + hex.EncodeToString(sum[:]), nil
}

func openOrCreate(dir string) (layout.Path, error) {
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		return layout.Path(dir), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("oci: %w", err)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return "", errf(ErrRef, dir, "exists and is not an OCI image layout (no index.json)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("oci: %w", err)
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("oci: %s: %w", dir, err)
	}
	return lp, nil
}

func writeBlobBytes(lp layout.Path, b []byte) (v1.Descriptor, error) {
	h, n, err := v1.SHA256(bytes.NewReader(b))
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := lp.WriteBlob(h, io.NopCloser(bytes.NewReader(b))); err != nil {
		return v1.Descriptor{}, fmt.Errorf("oci: %w", err)
	}
	return v1.Descriptor{Digest: h, Size: n}, nil
}

func writeBlobFile(lp layout.Path, path string) (v1.Descriptor, error) {
	f, err := os.Open(path)
	if err != nil {
		return v1.Descriptor{}, err
	}
	h, n, err := v1.SHA256(f)
	f.Close()
	if err != nil {
		return v1.Descriptor{}, err
	}
	if f, err = os.Open(path); err != nil {
		return v1.Descriptor{}, err
	}
	if err := lp.WriteBlob(h, f); err != nil { // closes f
		return v1.Descriptor{}, fmt.Errorf("oci: %w", err)
	}
	return v1.Descriptor{Digest: h, Size: n}, nil
}

func readIndex(lp layout.Path) (*v1.IndexManifest, error) {
	ii, err := lp.ImageIndex()
	if err != nil {
		return nil, err
	}
	return ii.IndexManifest()
}

// Fetched is an artifact copied out of a layout, blobs checked.
type Fetched struct {
	Ref         Ref // with the manifest digest filled in
	Archive     string
	Annotations map[string]string
	Subject     string
}

// Fetch finds the evidence artifact ref names (the only one in the layout
// when ref has no digest), checks the manifest and archive blobs against
// their digests and sizes, and writes the archive into destDir as
// <run id>.tar.gz. The caller verifies the archive, then CheckLabels.
func Fetch(ctx context.Context, ref Ref, destDir string) (*Fetched, error) {
	if _, err := os.Stat(filepath.Join(ref.Dir, "index.json")); err != nil {
		return nil, &Error{Kind: ErrNotFound, What: ref.Dir, Err: errors.New("not an OCI image layout (no index.json)")}
	}
	lp := layout.Path(ref.Dir)
	idx, err := readIndex(lp)
	if err != nil {
		return nil, &Error{Kind: ErrMalformed, What: "index.json", Err: err}
	}
	var cands []v1.Descriptor
	for _, d := range idx.Manifests {
		switch {
		case ref.Digest != "" && d.Digest.String() == ref.Digest:
			cands = append(cands, d)
		case ref.Digest == "" && d.ArtifactType == ArtifactType:
			cands = append(cands, d)
		}
	}
	switch {
	case len(cands) == 0 && ref.Digest != "":
		return nil, errf(ErrNotFound, ref.String(), "the layout's index.json does not list that manifest")
	case len(cands) == 0:
		return nil, errf(ErrNotFound, ref.String(), "the layout holds no Gatehouse evidence artifact")
	case len(cands) > 1 && ref.Digest == "":
		var ds []string
		for _, d := range cands {
			ds = append(ds, d.Digest.String()+" ("+d.Annotations[AnnotRunID]+")")
		}
		return nil, errf(ErrAmbiguous, ref.String(), "%d evidence artifacts; name one with @DIGEST: %s", len(cands), strings.Join(ds, ", "))
	}
	md := cands[0]
	mb, err := readBlob(ctx, lp, md.Digest, md.Size, maxManifest, nil)
	if err != nil {
		return nil, err
	}
	var m v1.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, &Error{Kind: ErrMalformed, What: md.Digest.String(), Err: err}
	}
	if m.ArtifactType != ArtifactType || len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType {
		return nil, errf(ErrMalformed, md.Digest.String(), "not a Gatehouse evidence manifest (artifactType %q, %d layers)", m.ArtifactType, len(m.Layers))
	}
	id := m.Annotations[AnnotRunID]
	if id == "" || filepath.Base(id) != id || strings.HasPrefix(id, ".") {
		return nil, errf(ErrMalformed, md.Digest.String(), "annotation %s is %q", AnnotRunID, id)
	}
	out := filepath.Join(destDir, id+".tar.gz")
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	l := m.Layers[0]
	_, err = readBlob(ctx, lp, l.Digest, l.Size, bundle.DefaultLimits.MaxTotal, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return nil, err
	}
	fe := &Fetched{Ref: Ref{Dir: ref.Dir, Digest: md.Digest.String()}, Archive: out, Annotations: m.Annotations}
	if m.Subject != nil {
		fe.Subject = m.Subject.Digest.String()
	}
	return fe, nil
}

const maxManifest = 4 << 20

// readBlob reads blobs/<alg>/<hex>, refusing more than want bytes (or max
// when the descriptor gives no size) and a digest or size other than the
// descriptor's. With w it streams there and returns nil bytes.
func readBlob(ctx context.Context, lp layout.Path, h v1.Hash, want, max int64, w io.Writer) ([]byte, error) {
	if h.Algorithm != "sha256" {
		return nil, errf(ErrMalformed, h.String(), "only sha256 digests")
	}
	if want <= 0 || want > max {
		return nil, errf(ErrMalformed, h.String(), "descriptor size %d (limit %d)", want, max)
	}
	rc, err := lp.Blob(h)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errf(ErrNotFound, h.String(), "blob missing from the layout")
	}
	if err != nil {
		return nil, fmt.Errorf("oci: %w", err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if w == nil {
		w = &buf
	}
	hs := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, hs), io.LimitReader(ctxReader{ctx, rc}, want+1))
	if err != nil {
		return nil, fmt.Errorf("oci: read %s: %w", h, err)
	}
	if n != want {
		return nil, errf(ErrTampered, h.String(), "blob is %d bytes, the descriptor says %d", n, want)
	}
	if got := hex.EncodeToString(hs.Sum(nil)); got != h.Hex {
		return nil, errf(ErrTampered, h.String(), "blob content digests to sha256:%s", got)
	}
	return buf.Bytes(), nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// CheckLabels compares the artifact's annotations (not signed) with the
// verified bundle (signed): a label that lies is tampering, even though the
// bundle itself is intact. sums is the digest of the bundle's SHA256SUMS.
func (f *Fetched) CheckLabels(run evidence.Run, sums string) error {
	for _, c := range []struct{ key, want string }{
		{AnnotRunID, run.ID}, {AnnotPolicyDigest, run.PolicyDigest}, {AnnotSumsDigest, sums},
		{AnnotImageDigest, run.ImageDigest},
	} {
		got := f.Annotations[c.key]
		if c.key == AnnotImageDigest && got == "" {
			continue // pushed without an image: nothing claimed
		}
		if c.key == AnnotImageDigest && run.ImageDigest == "" {
			continue // an --image the run did not record: the pusher's claim
		}
		if got != c.want {
			return errf(ErrTampered, "annotation "+c.key, "says %q, the signed bundle says %q", got, c.want)
		}
	}
	if f.Subject != "" && f.Subject != f.Annotations[AnnotImageDigest] {
		return errf(ErrTampered, "subject", "names %s, annotation %s says %q", f.Subject, AnnotImageDigest, f.Annotations[AnnotImageDigest])
	}
	return nil
}
