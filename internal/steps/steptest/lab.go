// Package steptest is the fake lab the steps' tests share. It implements
// the whole steps.Lab: it records the hits a fake sandbox delivers (Add),
// and has each optional ability only when a test gives it one; without,
// the ability says steps.ErrUnsupported, as the Lab contract asks.
package steptest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
)

// Lab is a fake lab. The zero value has no endpoints and no optional
// ability; its sessions get a namespace path that does not exist.
type Lab struct {
	// Counts, when set, is the kernel-side accounting (steps.Lab.Emitted).
	Counts func(session string) (map[string]uint64, error)
	// ListTables, when set, is the outside view of a session namespace's
	// nftables tables (steps.Lab.Tables).
	ListTables func(session string) ([]string, error)
	// QuietAnswer, when set, is the lab's word on whether it recorded
	// everything (steps.Lab.Quiet).
	QuietAnswer func(sessions ...string) (bool, string, error)
	// CredBroker, when set, is the lab's credential broker.
	CredBroker *lab.Broker

	mu   sync.Mutex
	hits []evidence.Hit
}

var _ steps.Lab = (*Lab)(nil)

func unsupported(what string) error {
	return fmt.Errorf("fake lab: %s: %w", what, steps.ErrUnsupported)
}

// Add records a hit, as an endpoint would.
func (l *Lab) Add(h evidence.Hit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hits = append(l.hits, h)
}

// Attach gives the session a namespace that does not exist.
func (l *Lab) Attach(_ context.Context, session string) (lab.Network, error) {
	return lab.Network{NetnsName: "fake-" + session, NetnsPath: "/nonexistent/" + session}, nil
}

func (l *Lab) Detach(context.Context, string) error { return nil }
func (l *Lab) Sealed(context.Context) error         { return nil }

// Hits is a copy of every hit added so far.
func (l *Lab) Hits() []evidence.Hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]evidence.Hit(nil), l.hits...)
}

// Addrs is the lab's default addresses.
func (l *Lab) Addrs() lab.Addrs { return lab.DefaultAddrs() }

// Track and Untrack do nothing: a fake's hits carry their session.
func (l *Lab) Track(string, ...string) {}
func (l *Lab) Untrack(string)          {}

func (l *Lab) Emitted(_ context.Context, session string) (map[string]uint64, error) {
	if l.Counts == nil {
		return nil, unsupported("kernel accounting")
	}
	return l.Counts(session)
}

func (l *Lab) Tables(_ context.Context, session string) ([]string, error) {
	if l.ListTables == nil {
		return nil, unsupported("tables")
	}
	return l.ListTables(session)
}

func (l *Lab) Quiet(_ context.Context, sessions ...string) (bool, string, error) {
	if l.QuietAnswer == nil {
		return false, "", unsupported("quiet")
	}
	return l.QuietAnswer(sessions...)
}

func (l *Lab) Broker() *lab.Broker { return l.CredBroker }

// The abilities below the fake never has.

func (l *Lab) Flows(context.Context, string) (lab.FlowEvidence, error) {
	return lab.FlowEvidence{}, unsupported("flow evidence")
}
func (l *Lab) Holds(context.Context, string) ([]string, error) {
	return nil, unsupported("flow evidence")
}
func (l *Lab) Cut(context.Context, string) error { return unsupported("cut") }
func (l *Lab) EgressOpen(context.Context, string, time.Duration) (bool, string, error) {
	return false, "", unsupported("egress check")
}
func (l *Lab) ServeSocket(context.Context, string, string, string, []byte) (func(context.Context) error, error) {
	return nil, unsupported("sockets")
}
func (l *Lab) Intake() *intake.Service      { return nil }
func (l *Lab) IntakeMinter() *intake.Minter { return nil }
