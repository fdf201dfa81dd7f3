package steps

import (
	"context"
	"testing"
	"time"
)

// slowLink is a lab whose session link answers a connection only with
// more time than the first egress check gives (a loaded machine), or
// never (refused); asked is each check's time.
func slowLink(refused bool) (l *fakeLab, asked *[]time.Duration) {
	asked = new([]time.Duration)
	return &fakeLab{egress: func(timeout time.Duration) (bool, string, error) {
		*asked = append(*asked, timeout)
		if refused || timeout <= egressCheckTimeout {
			return false, "a connection to the lab failed: i/o timeout", nil
		}
		return true, "", nil
	}}, asked
}

// A refusal is claimed only when a second, longer look finds it too: a
// leaky hook's egress was scored refused when one check timed out under
// load (issue 22).
func TestEgressRefusalIsLookedAtTwice(t *testing.T) {
	slow, _ := slowLink(false)
	if open, why, err := egressOpen(context.Background(), slow, "s1"); err != nil || !open {
		t.Errorf("a slow but open link: open %v (%s), %v; want open", open, why, err)
	}
	cut, asked := slowLink(true)
	if open, _, err := egressOpen(context.Background(), cut, "s1"); err != nil || open {
		t.Errorf("a cut link: open %v, %v; want refused", open, err)
	}
	if len(*asked) != 2 || (*asked)[1] <= (*asked)[0] {
		t.Errorf("a cut link was asked with %v, want a second, longer look", *asked)
	}
}
