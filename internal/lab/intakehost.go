package lab

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
)

// startIntake serves the reference results-intake service (internal/lab/intake) at
// IntakeV4, HTTP 80 and HTTPS 443, named IntakeLabName. It is the
// legitimate route a triage result goes back by; each request becomes a
// hit on endpoint "intake" carrying the service's decision and what it
// stored, with the token only as its hash. The service is always the
// correct one: no lab option selects a broken variant.
func (l *Lab) startIntake(ctx context.Context) error {
	m, err := intake.NewMinter(intake.MinterOptions{})
	if err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	svc, err := intake.New(intake.Options{Key: m.PublicKey(), Record: l.recordIntake})
	if err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	l.minter, l.intake = m, svc
	if err := l.serveHTTP(ctx, hostPort(IntakeV4, 80), svc, nil); err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	conf, err := selfSignedTLS([]string{IntakeV4})
	if err != nil {
		return fmt.Errorf("intake: %w", err)
	}
	if err := l.serveHTTP(ctx, hostPort(IntakeV4, 443), svc, conf); err != nil {
		return fmt.Errorf("intake https: %w", err)
	}
	return nil
}

// Intake is the lab's results-intake service: its Store and Records are
// what a rehearsal inspects (nil before Up).
func (l *Lab) Intake() *intake.Service { return l.intake }

// IntakeMinter mints run tokens the lab's intake service accepts (nil
// before Up).
func (l *Lab) IntakeMinter() *intake.Minter { return l.minter }

// recordIntake turns one intake record into a hit. Its Data is the record
// itself (JSON), so evidence shows the decision, the token's hash and
// claims, and what was stored.
func (l *Lab) recordIntake(r intake.Record) {
	summary := fmt.Sprintf("%s %s", r.Method, r.URI)
	if r.Op != "" {
		summary += " op=" + r.Op
	}
	if r.TokenHash != "" {
		summary += " token=" + r.TokenHash
	}
	summary += fmt.Sprintf(" -> %d %s", r.Status, r.Decision)
	data, _ := json.Marshal(r)
	h := evidence.Hit{
		Endpoint: "intake", Proto: r.Proto, Src: r.Src, Dst: r.Dst,
		Summary: summary, Data: string(data), Served: r.Accepted(),
		Method: r.Method, Path: r.Path, BodyBytes: r.BodyBytes,
	}
	l.record(h, h.Src)
}
