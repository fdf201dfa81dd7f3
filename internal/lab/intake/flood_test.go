package intake_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

// An agent that floods its report with attachments: the service holds at
// most MaxAttachments of them and MaxAttachmentBytes together, refusing
// the rest (409 too many, 413 too large), and keeps each one's name, size
// and digest, never its bytes: nothing of what it holds (the rehearsal's
// evidence) grows with the flood, and no attachment's data appears in it.
func TestAttachmentFloodIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int // bytes per attachment
		sent     int
		kept     int
		refusal  int
		contains string // in the refusal's reason
	}{
		{"too many small ones", 100, 500, intake.MaxAttachments, http.StatusConflict, "attachments, the most it may"},
		{"too many bytes", intake.MaxEvidenceBody, 100, intake.MaxAttachmentBytes / intake.MaxEvidenceBody, http.StatusRequestEntityTooLarge, "would pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, intake.Correct)
			tok, _ := f.m.Mint(sub, 0)
			digests := map[string]string{}
			for i := range tc.sent {
				// A marker at the start and end of every body: none may reach the store.
				data := []byte(fmt.Sprintf("DATA-%04d-", i) + strings.Repeat("z", tc.size-19) + fmt.Sprintf("-END-%04d", i))
				name := fmt.Sprintf("f%04d.log", i)
				got := f.do(t, "POST", base+"/evidence?name="+name, tok, data)
				want := http.StatusOK
				if i >= tc.kept {
					want = tc.refusal
				}
				if got != want {
					t.Fatalf("attachment %d: %d, want %d", i, got, want)
				}
				d := sha256.Sum256(data)
				digests[name] = hex.EncodeToString(d[:])
			}
			e, _ := f.svc.Store().Get(sub)
			if len(e.Evidence) != tc.kept || e.Writes != tc.kept {
				t.Fatalf("store holds %d attachments (%d writes), want %d", len(e.Evidence), e.Writes, tc.kept)
			}
			for _, a := range e.Evidence {
				if a.SHA256 != digests[a.Name] || a.Size != tc.size {
					t.Fatalf("attachment %s: sha256 %s size %d, want %s and %d", a.Name, a.SHA256, a.Size, digests[a.Name], tc.size)
				}
			}
			held, err := json.Marshal(f.svc.Store().All())
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(held, []byte("zzzzzzzz")) || bytes.Contains(held, []byte("-END-")) || bytes.Contains(held, []byte(`"data"`)) {
				t.Fatalf("the store holds attachment data: %.200s", held)
			}
			if len(held) > 300*intake.MaxAttachments {
				t.Fatalf("the store's JSON is %d bytes for %d attachments: not name, size and digest only", len(held), tc.kept)
			}
			recs := f.svc.Records()
			last := recs[len(recs)-1]
			if last.Status != tc.refusal || !strings.Contains(last.Decision, tc.contains) || last.Stored != "" {
				t.Fatalf("last record: %d %q stored %q", last.Status, last.Decision, last.Stored)
			}
		})
	}
}
