package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/ocistore"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
)

// signedArchivedRun makes a key pair and one real signed, archived run of
// the hardened profile's external-callback gate.
func signedArchivedRun(t *testing.T) (dir, archive, pub string) {
	t.Helper()
	ctx := context.Background()
	tmp := t.TempDir()
	prefix := filepath.Join(tmp, "ci")
	if r := gatehouse(t, ctx, "keys", "generate", "--out", prefix); r.code != exitOK {
		t.Fatalf("keys generate: exit %d: %s", r.code, r.stderr)
	}
	out := filepath.Join(tmp, "runs")
	r := gatehouse(t, ctx, "run", "--profile", profilePath("bwrap-hardened.yaml"), "--gates", "external-callback",
		"--out", out, "--probe", probetest.Build(t), "--quiet", "--key", prefix+".key", "--archive")
	m := regexp.MustCompile(`(?m)^evidence: (.+)$`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	dir = m[1]
	return dir, filepath.Join(out, filepath.Base(dir)+".tar.gz"), prefix + ".pub"
}

var pushedRE = regexp.MustCompile(`(?m)^pushed:   (oci-layout:.+@(sha256:[0-9a-f]{64}))$`)

// TestOCIEvidence pushes a real signed run into an OCI image layout on disk,
// fetches it back with verify --from and checks it verifies offline with the
// same verdicts as the archive; tampered layouts and bad references refused.
func TestOCIEvidence(t *testing.T) {
	needSandbox(t)
	t.Setenv("COSIGN_PASSWORD", "correct horse")
	dir, archive, pub := signedArchivedRun(t)
	ctx := context.Background()
	lay := filepath.Join(t.TempDir(), "evidence")

	// The folder (archived on the fly) and the run's own archive are the same
	// bytes, so the same artifact: stored once.
	p1 := gatehouse(t, ctx, "push", "--to", "oci-layout:"+lay, dir)
	p2 := gatehouse(t, ctx, "push", "--to", lay, archive)
	m1, m2 := pushedRE.FindStringSubmatch(p1.stdout), pushedRE.FindStringSubmatch(p2.stdout)
	if p1.code != exitOK || p2.code != exitOK || m1 == nil || m2 == nil {
		t.Fatalf("push: exit %d/%d\n%s%s\n%s%s", p1.code, p2.code, p1.stdout, p1.stderr, p2.stdout, p2.stderr)
	}
	if m1[2] != m2[2] {
		t.Errorf("pushing the folder and its archive gave two manifests: %s, %s", m1[2], m2[2])
	}
	ref, digest := m1[1], m1[2]

	t.Run("the layout is an OCI image layout holding our artifact", func(t *testing.T) {
		ii, err := layout.ImageIndexFromPath(lay)
		if err != nil {
			t.Fatal(err)
		}
		im, err := ii.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != digest || im.Manifests[0].ArtifactType != ocistore.ArtifactType {
			t.Fatalf("index.json manifests: %+v", im.Manifests)
		}
		h, _ := v1.NewHash(digest)
		img, err := ii.Image(h)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		run := readRunJSON(t, dir)
		sums, err := os.ReadFile(filepath.Join(dir, bundle.SumsFile))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ocistore.AnnotRunID: run.ID, ocistore.AnnotPolicyDigest: run.PolicyDigest,
			ocistore.AnnotSumsDigest: sha256Hex(sums)}
		for k, v := range want {
			if m.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
			}
		}
		if m.ArtifactType != ocistore.ArtifactType || len(m.Layers) != 1 || m.Subject != nil {
			t.Errorf("manifest: artifactType %q, %d layers, subject %v (a bwrap run has no image)", m.ArtifactType, len(m.Layers), m.Subject)
		}
		tgz, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		if m.Layers[0].Digest.String() != sha256Hex(tgz) || m.Layers[0].Size != int64(len(tgz)) {
			t.Errorf("layer %v is not the run's archive (%s, %d bytes)", m.Layers[0], sha256Hex(tgz), len(tgz))
		}
	})

	t.Run("round trip verifies offline with the same verdicts", func(t *testing.T) {
		a := gatehouse(t, ctx, "verify", archive, "--key", pub, "--output", "json")
		for _, from := range []string{"oci-layout:" + lay, ref} {
			b := gatehouse(t, ctx, "verify", "--from", from, "--key", pub, "--output", "json")
			if a.code != exitOK || b.code != exitOK {
				t.Fatalf("verify: archive exit %d, --from %s exit %d\n%s\n%s%s", a.code, from, b.code, a.stderr, b.stdout, b.stderr)
			}
			var da, db verifyDoc
			if err := json.Unmarshal([]byte(a.stdout), &da); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(b.stdout), &db); err != nil {
				t.Fatal(err)
			}
			if !db.Verified || len(db.Results) == 0 {
				t.Fatalf("--from %s: %+v", from, db)
			}
			if d := cmp.Diff(da.Results, db.Results); d != "" {
				t.Errorf("verdicts differ between the archive and --from %s:\n%s", from, d)
			}
		}
		r := gatehouse(t, ctx, "verify", "--from", ref, "--key", pub)
		if r.code != exitOK || !strings.Contains(r.stdout, "VERIFIED: "+ref) || !strings.Contains(r.stdout, "external-callback") {
			t.Errorf("text verify --from: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("another key is refused", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other")
		if r := gatehouse(t, ctx, "keys", "generate", "--out", other); r.code != exitOK {
			t.Fatal(r.stderr)
		}
		r := gatehouse(t, ctx, "verify", "--from", ref, "--key", other+".pub")
		if r.code != exitViolation || !strings.Contains(r.stderr, "NOT VERIFIED") {
			t.Errorf("exit %d, stderr %s", r.code, r.stderr)
		}
	})

	t.Run("a tampered blob is refused", func(t *testing.T) {
		cp := copyLayout(t, lay)
		blob := layerBlob(t, cp, digest)
		b, err := os.ReadFile(blob)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r := gatehouse(t, ctx, "verify", "--from", "oci-layout:"+cp+"@"+digest, "--key", pub)
		if r.code != exitViolation || !strings.Contains(r.stderr, "layout does not match") {
			t.Errorf("exit %d, want 1 naming the blob; stderr %s", r.code, r.stderr)
		}
	})

	t.Run("a re-digested tampered archive fails the signatures", func(t *testing.T) {
		// Whoever can write the layout can make every digest consistent:
		// then only the bundle's signatures stand in the way.
		cp := copyLayout(t, lay)
		forged := filepath.Join(t.TempDir(), filepath.Base(dir))
		if err := os.CopyFS(forged, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		res := filepath.Join(forged, evidence.ResultsFile)
		b, err := os.ReadFile(res)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(res, append(b, ' '), 0o644); err != nil {
			t.Fatal(err)
		}
		p := gatehouse(t, ctx, "push", "--to", cp, forged)
		m := pushedRE.FindStringSubmatch(p.stdout)
		if p.code != exitOK || m == nil {
			t.Fatalf("push of the forged folder: exit %d %s", p.code, p.stderr)
		}
		r := gatehouse(t, ctx, "verify", "--from", m[1], "--key", pub)
		if r.code != exitViolation || !strings.Contains(r.stderr, evidence.ResultsFile) {
			t.Errorf("exit %d, want 1 naming %s; stderr %s", r.code, evidence.ResultsFile, r.stderr)
		}
		// Two artifacts now: without a digest the reference is ambiguous.
		r = gatehouse(t, ctx, "verify", "--from", "oci-layout:"+cp, "--key", pub)
		if r.code != exitUsage || !strings.Contains(r.stderr, "ambiguous") {
			t.Errorf("ambiguous --from: exit %d, stderr %s", r.code, r.stderr)
		}
	})

	t.Run("a label that lies is refused", func(t *testing.T) {
		cp := copyLayout(t, lay)
		forged := relabel(t, cp, digest, ocistore.AnnotPolicyDigest, "sha256:"+strings.Repeat("0", 64))
		r := gatehouse(t, ctx, "verify", "--from", "oci-layout:"+cp+"@"+forged, "--key", pub)
		if r.code != exitViolation || !strings.Contains(r.stderr, ocistore.AnnotPolicyDigest) {
			t.Errorf("exit %d, want 1 naming the annotation; stderr %s", r.code, r.stderr)
		}
	})

	t.Run("subject names the image given", func(t *testing.T) {
		cp := filepath.Join(t.TempDir(), "with-image")
		img := "sha256:" + strings.Repeat("ab", 32)
		p := gatehouse(t, ctx, "push", "--to", cp, "--image", img, archive)
		m := pushedRE.FindStringSubmatch(p.stdout)
		if p.code != exitOK || m == nil || !strings.Contains(p.stdout, "subject (sandbox image) "+img) {
			t.Fatalf("push --image: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		b, err := os.ReadFile(layerBlobPath(cp, m[2]))
		if err != nil {
			t.Fatal(err)
		}
		var man v1.Manifest
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
		if man.Subject == nil || man.Subject.Digest.String() != img || man.Annotations[ocistore.AnnotImageDigest] != img {
			t.Errorf("subject %+v, annotations %v", man.Subject, man.Annotations)
		}
		if r := gatehouse(t, ctx, "verify", "--from", m[1], "--key", pub); r.code != exitOK {
			t.Errorf("verify: exit %d %s", r.code, r.stderr)
		}
	})

	t.Run("unsigned evidence is not pushed", func(t *testing.T) {
		uns := filepath.Join(t.TempDir(), filepath.Base(dir))
		if err := os.CopyFS(uns, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Join(uns, bundle.AttestDir))
		os.Remove(filepath.Join(uns, bundle.SumsFile))
		r := gatehouse(t, ctx, "push", "--to", filepath.Join(t.TempDir(), "l"), uns)
		if r.code != exitViolation || !strings.Contains(r.stderr, "UNSIGNED") {
			t.Errorf("exit %d, stderr %s", r.code, r.stderr)
		}
	})

	t.Run("bad references", func(t *testing.T) {
		notLayout := t.TempDir()
		os.WriteFile(filepath.Join(notLayout, "x"), []byte("x"), 0o644)
		missing := "oci-layout:" + lay + "@sha256:" + strings.Repeat("1", 64)
		for _, c := range []struct {
			code int
			args []string
		}{
			{exitUsage, []string{"verify", "--from", "docker://registry.example/x", "--key", pub}},
			{exitUsage, []string{"verify", "--from", lay, "--key", pub}}, // the scheme is required
			{exitUsage, []string{"verify", "--from", "oci-layout:", "--key", pub}},
			{exitUsage, []string{"verify", "--from", "oci-layout:" + lay + "@sha256:zz", "--key", pub}},
			{exitUsage, []string{"verify", "--from", "oci-layout:" + lay + "@latest", "--key", pub}},
			{exitUsage, []string{"verify", "--from", ref, archive, "--key", pub}},
			{exitUsage, []string{"verify", "--from", ref}},
			{exitUsage, []string{"push", archive}},
			{exitUsage, []string{"push", "--to", lay}},
			{exitUsage, []string{"push", "--to", "https://registry.example/x", archive}},
			{exitUsage, []string{"push", "--to", ref, archive}},
			{exitUsage, []string{"push", "--to", notLayout, archive}},
			{exitUsage, []string{"push", "--to", lay, "--image", "latest", archive}},
			{exitUsage, []string{"push", "--to", lay, filepath.Join(lay, "nope")}},
			{exitViolation, []string{"verify", "--from", missing, "--key", pub}},
			{exitViolation, []string{"verify", "--from", "oci-layout:" + notLayout, "--key", pub}},
		} {
			if r := gatehouse(t, ctx, c.args...); r.code != c.code {
				t.Errorf("%v: exit %d, want %d; stderr %s", c.args, r.code, c.code, r.stderr)
			}
		}
	})
}

func readRunJSON(t *testing.T, dir string) (run struct {
	ID           string `json:"id"`
	PolicyDigest string `json:"policy_digest"`
}) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	return run
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func copyLayout(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "layout")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func layerBlobPath(lay, digest string) string {
	return filepath.Join(lay, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// layerBlob is the path of the archive blob of manifest digest.
func layerBlob(t *testing.T, lay, digest string) string {
	t.Helper()
	b, err := os.ReadFile(layerBlobPath(lay, digest))
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return layerBlobPath(lay, m.Layers[0].Digest.String())
}

// relabel writes a copy of manifest digest with one annotation changed, as
// a consistent blob listed in index.json, and returns its digest.
func relabel(t *testing.T, lay, digest, key, val string) string {
	t.Helper()
	b, err := os.ReadFile(layerBlobPath(lay, digest))
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m.Annotations[key] = val
	nb, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h, n, _ := v1.SHA256(bytes.NewReader(nb))
	lp := layout.Path(lay)
	if err := lp.WriteBlob(h, io.NopCloser(bytes.NewReader(nb))); err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendDescriptor(v1.Descriptor{MediaType: m.MediaType, Digest: h, Size: n, ArtifactType: m.ArtifactType}); err != nil {
		t.Fatal(err)
	}
	return h.String()
}
