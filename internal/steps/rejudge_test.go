package steps_test

import (
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// A forbidden contact recorded after a verdict (a late packet, a hit the
// lab logged after the scenario's window) turns its PASS into a FAIL when
// the run's whole record is judged; the other scenarios keep theirs, and
// judging the same record again changes nothing.
func TestRejudgeOverTheWholeRecord(t *testing.T) {
	fl := &steptest.Lab{}
	tgt := &fake.Target{Lab: fl, Deliver: onlyControl}
	out := runFake(t, tgt, "external-callback", "cloud-metadata")
	for _, r := range out.Results {
		if r.Verdict != evidence.Pass {
			t.Fatalf("%s/%s: %s before the late hit (%s), want PASS", r.Gate, r.Path, r.Verdict, r.Reason)
		}
	}
	if n := out.Judge(fl.Hits()); n != 0 {
		t.Fatalf("nothing new arrived, yet %d verdict(s) changed", n)
	}
	late := out.Results[0]
	fl.Add(evidence.Hit{Time: time.Now(), Endpoint: "callback", Proto: "udp", Session: late.Session, Summary: "udp 12 bytes"})
	if n := out.Judge(fl.Hits()); n != 1 {
		t.Fatalf("%d verdict(s) changed by one late forbidden hit, want 1", n)
	}
	for _, r := range out.Results {
		want := evidence.Pass
		if r.Session == late.Session && r.Gate == late.Gate {
			want = evidence.Fail
		}
		if r.Verdict != want {
			t.Errorf("%s/%s (%s): %s (%s), want %s", r.Gate, r.Path, r.Session, r.Verdict, r.Reason, want)
		}
	}
	// Judging the same record again changes nothing more.
	if n := out.Judge(fl.Hits()); n != 0 {
		t.Fatalf("re-judging the same record again changed %d verdict(s)", n)
	}
}
