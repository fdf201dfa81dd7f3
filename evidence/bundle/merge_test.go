package bundle_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence/bundle"
	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

func TestMergeSealVerifiesAndRefusesTampering(t *testing.T) {
	ctx := context.Background()
	s, v, otherPub := testKeys(t)
	fresh := func(t *testing.T) string {
		dir := t.TempDir()
		for name, body := range map[string]string{"merge.json": `{"group":"g"}`, "results.json": "[]", "report.html": "<p>x</p>"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := bundle.SealMerge(ctx, dir, map[string]string{"group": "g"}, s); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := fresh(t)
	pred, err := bundle.VerifyMerge(ctx, dir, v)
	if err != nil || string(pred) != `{"group":"g"}` {
		t.Fatalf("bundle.VerifyMerge = %s, %v", pred, err)
	}
	if d, err := bundle.SumsDigest(dir); err != nil || len(d) != 64 {
		t.Fatalf("bundle.SumsDigest = %q, %v", d, err)
	}
	if err := bundle.SealMerge(ctx, dir, nil, s); !errors.Is(err, bundle.ErrSealed) {
		t.Errorf("sealing twice: %v, want bundle.ErrSealed", err)
	}
	other, err := keys.NewVerifier(otherPub)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		edit func(dir string)
		v    bundle.Verifier
		want error
	}{
		"another key":    {func(string) {}, other, bundle.ErrSignature},
		"an edited file": {func(d string) { os.WriteFile(filepath.Join(d, "results.json"), []byte("[{}]"), 0o644) }, v, bundle.ErrDigest},
		"an added file":  {func(d string) { os.WriteFile(filepath.Join(d, "extra.json"), []byte("{}"), 0o644) }, v, bundle.ErrExtraFile},
		"a removed file": {func(d string) { os.Remove(filepath.Join(d, "report.html")) }, v, bundle.ErrMissingFile},
		"no attestation": {func(d string) { os.Remove(filepath.Join(d, filepath.FromSlash(bundle.MergeAttestFile))) }, v, bundle.ErrUnsigned},
		"edited SHA256SUMS": {func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, bundle.SumsFile))
			os.WriteFile(filepath.Join(d, bundle.SumsFile), []byte(strings.Replace(string(b), "report.html", "report.htm", 1)), 0o644)
		}, v, bundle.ErrDigest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := fresh(t)
			tc.edit(d)
			if _, err := bundle.VerifyMerge(ctx, d, tc.v); !errors.Is(err, tc.want) {
				t.Errorf("bundle.VerifyMerge = %v, want %v", err, tc.want)
			}
		})
	}
}
