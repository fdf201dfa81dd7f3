package alerts_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/alerts"
)

// seed adds every line (or, whole=true, the whole file) of the samples.
func seed(f *testing.F, whole bool, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		if whole {
			f.Add(b)
			continue
		}
		for l := range bytes.Lines(b) {
			f.Add(l)
		}
	}
}

// fuzzParser: no panic; an error is ErrMalformed; events keep bytes of the
// input only, and never more events than the input could describe.
func fuzzParser(f *testing.F, p alerts.Parser) {
	f.Fuzz(func(t *testing.T, in []byte) {
		es, err := p(in, time.Unix(0, 0))
		if err != nil {
			if !errors.Is(err, alerts.ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		if len(es) == 0 || len(es) > len(in) {
			t.Fatalf("%d events from %d bytes", len(es), len(in))
		}
		for _, e := range es {
			if len(e.Raw) > len(in)+1 {
				t.Fatalf("raw of %d bytes from %d", len(e.Raw), len(in))
			}
		}
	})
}

func FuzzFalco(f *testing.F) {
	seed(f, false, "falco_file.jsonl", "falco_http.json")
	fuzzParser(f, alerts.ParseFalco)
}

func FuzzTetragon(f *testing.F) {
	seed(f, false, "tetragon.jsonl")
	fuzzParser(f, alerts.ParseTetragon)
}

func FuzzAudit(f *testing.F) {
	seed(f, true, "audit.log", "audit_enriched.log")
	seed(f, false, "audit.log")
	fuzzParser(f, alerts.ParseAudit)
}

func FuzzOCSF(f *testing.F) {
	seed(f, true, "ocsf_finding.json", "ocsf_batch.json")
	fuzzParser(f, alerts.ParseOCSF)
}
