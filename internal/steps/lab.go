package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

// Lab is everything the steps use of the lab of controlled endpoints.
// lab.Lab is the one real implementation and has every ability; the
// steps' tests share one fake (steptest.Lab).
//
// A lab that lacks an ability says so, never silently: an ability that
// returns an error returns one wrapping ErrUnsupported, and one that
// returns a service returns nil. The steps treat either as "no evidence
// from the lab", never as evidence: each method's comment says what a
// missing ability does to a verdict, and none turns one into a PASS.
// A run with no lab at all (NetNone, Config.Lab nil) is a lab that
// lacks every ability (noLab).
type Lab interface {
	// Attach joins a new session namespace to the lab; Detach removes it.
	Attach(ctx context.Context, session string) (lab.Network, error)
	Detach(ctx context.Context, session string) error
	// Hits is every hit the lab recorded so far.
	Hits() []evidence.Hit
	// Sealed checks that nothing routes out of the lab namespace.
	Sealed(ctx context.Context) error

	// Addrs is which addresses the lab serves. Always provided (a fake
	// returns lab.DefaultAddrs).
	Addrs() lab.Addrs
	// Track tells the lab a session's tags, for in-band attribution of
	// its hits, until Untrack. A lab that attributes hits by other means
	// (a fake records each hit with its session) may do nothing.
	Track(session string, tags ...string)
	Untrack(session string)

	// Emitted is the session's kernel-side count of packets per
	// destination. ErrUnsupported: no kernel-side proof of attempt, and
	// the scenario says so (the probe's report is all there is; a probe
	// claim the kernel did not see cannot be checked).
	Emitted(ctx context.Context, session string) (map[string]uint64, error)
	// Flows and Holds are the session's flow evidence, from which a
	// blocked attempt is settled early. ErrUnsupported: nothing is
	// settled early; every attempt waits its whole timeout.
	Flows(ctx context.Context, session string) (lab.FlowEvidence, error)
	Holds(ctx context.Context, session string) ([]string, error)
	// Quiet says whether the lab has recorded everything of these
	// sessions. ErrUnsupported: a verdict waits the whole Settle.
	Quiet(ctx context.Context, sessions ...string) (bool, string, error)
	// Tables lists the session namespace's nftables tables from outside.
	// ErrUnsupported: the takedown has no outside view (no proof that a
	// control survived).
	Tables(ctx context.Context, session string) ([]string, error)

	// Cut takes the lab's end of a session's link down; EgressOpen checks
	// whether the session still reaches the lab. ErrUnsupported: the
	// response's "egress refused" effect is not measured.
	Cut(ctx context.Context, session string) error
	EgressOpen(ctx context.Context, session string, timeout time.Duration) (bool, string, error)
	// ServeSocket serves a unix socket that records every connection as a
	// hit. ErrUnsupported: the credential-helper and engine sockets are
	// not planted (nothing could record a contact with them).
	ServeSocket(ctx context.Context, path, endpoint, session string, reply []byte) (func(context.Context) error, error)

	// Broker is the lab's credential broker; nil: none, so no broker
	// token is planted and the broker check is not made.
	Broker() *lab.Broker
	// Intake and IntakeMinter are the results-intake service and its
	// token minter; nil: none, and the rehearsal refuses to run.
	Intake() *intake.Service
	IntakeMinter() *intake.Minter
}

// ErrUnsupported is what a Lab's optional ability returns (wrapped) when
// the lab does not have it. The real lab never returns it.
var ErrUnsupported = errors.New("the lab does not provide this")

// lab is the run's lab, or noLab when it has none (NetNone): every
// optional ability is then missing, as the Lab contract says.
func (r *runner) lab() Lab {
	if r.cfg.Lab == nil {
		return noLab{}
	}
	return r.cfg.Lab
}

// noLab is the lab of a run without one: it lacks every ability.
type noLab struct{}

func unsupported(what string) error { return fmt.Errorf("no lab: %s: %w", what, ErrUnsupported) }

func (noLab) Attach(context.Context, string) (lab.Network, error) {
	return lab.Network{}, unsupported("attach")
}
func (noLab) Detach(context.Context, string) error { return unsupported("detach") }
func (noLab) Hits() []evidence.Hit                 { return nil }
func (noLab) Sealed(context.Context) error         { return unsupported("sealed") }
func (noLab) Addrs() lab.Addrs                     { return lab.DefaultAddrs() }
func (noLab) Track(string, ...string)              {}
func (noLab) Untrack(string)                       {}
func (noLab) Emitted(context.Context, string) (map[string]uint64, error) {
	return nil, unsupported("kernel accounting")
}
func (noLab) Flows(context.Context, string) (lab.FlowEvidence, error) {
	return lab.FlowEvidence{}, unsupported("flow evidence")
}
func (noLab) Holds(context.Context, string) ([]string, error) {
	return nil, unsupported("flow evidence")
}
func (noLab) Quiet(context.Context, ...string) (bool, string, error) {
	return false, "", unsupported("quiet")
}
func (noLab) Tables(context.Context, string) ([]string, error) {
	return nil, unsupported("tables")
}
func (noLab) Cut(context.Context, string) error { return unsupported("cut") }
func (noLab) EgressOpen(context.Context, string, time.Duration) (bool, string, error) {
	return false, "", unsupported("egress check")
}
func (noLab) ServeSocket(context.Context, string, string, string, []byte) (func(context.Context) error, error) {
	return nil, unsupported("sockets")
}
func (noLab) Broker() *lab.Broker          { return nil }
func (noLab) Intake() *intake.Service      { return nil }
func (noLab) IntakeMinter() *intake.Minter { return nil }
