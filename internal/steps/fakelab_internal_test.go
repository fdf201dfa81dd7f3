package steps

import (
	"context"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

// fakeLab is the lab of this package's own tests, which cannot use
// steptest.Lab (it imports this package). It lacks every ability, as
// noLab does, except those a test gives it.
type fakeLab struct {
	noLab
	// flows, when set, is the flow evidence; holds is then what could
	// hold a packet.
	flows func() lab.FlowEvidence
	holds []string
	// quiet, when set, is the lab's word on whether it recorded everything.
	quiet func() (bool, string, error)
	// egress, when set, says whether a session's link is open, given the
	// time the check had.
	egress func(timeout time.Duration) (bool, string, error)
}

func (l *fakeLab) Flows(ctx context.Context, session string) (lab.FlowEvidence, error) {
	if l.flows == nil {
		return l.noLab.Flows(ctx, session)
	}
	return l.flows(), nil
}

func (l *fakeLab) Holds(ctx context.Context, session string) ([]string, error) {
	if l.flows == nil {
		return l.noLab.Holds(ctx, session)
	}
	return l.holds, nil
}

func (l *fakeLab) Quiet(ctx context.Context, sessions ...string) (bool, string, error) {
	if l.quiet == nil {
		return l.noLab.Quiet(ctx, sessions...)
	}
	return l.quiet()
}

func (l *fakeLab) EgressOpen(ctx context.Context, session string, timeout time.Duration) (bool, string, error) {
	if l.egress == nil {
		return l.noLab.EgressOpen(ctx, session, timeout)
	}
	return l.egress(timeout)
}
