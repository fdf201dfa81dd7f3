package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Plan input caps. They keep every report line the probe writes well under
// Decode's default line limit even when every byte needs JSON escaping.
const (
	MaxPlanBytes = 1 << 20
	MaxSteps     = 10000
	maxIDLen     = 128
	maxTargetLen = 4096
	maxHints     = 16
)

// ReadPlan decodes a plan strictly: one JSON object, no unknown fields, no
// trailing data, at most MaxPlanBytes, and it must pass Validate.
func ReadPlan(r io.Reader) (Plan, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPlanBytes+1))
	if err != nil {
		return Plan{}, fmt.Errorf("probe: read plan: %w", err)
	}
	if len(data) > MaxPlanBytes {
		return Plan{}, fmt.Errorf("probe: plan exceeds %d bytes", MaxPlanBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("probe: decode plan: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Plan{}, errors.New("probe: decode plan: trailing data after the plan")
	}
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// Validate checks what the runner relies on: unique, bounded step IDs and
// bounded targets. Unknown kinds are not a plan error; they are reported.
func (p Plan) Validate() error {
	if p.Parallel < 0 {
		return fmt.Errorf("probe: plan: parallel %d < 0", p.Parallel)
	}
	if len(p.Steps) > MaxSteps {
		return fmt.Errorf("probe: plan: %d steps, at most %d", len(p.Steps), MaxSteps)
	}
	seen := make(map[string]bool, len(p.Steps))
	for i, s := range p.Steps {
		switch {
		case s.ID == "":
			return fmt.Errorf("probe: plan: step %d has no id", i)
		case len(s.ID) > maxIDLen:
			return fmt.Errorf("probe: plan: step %d id longer than %d bytes", i, maxIDLen)
		case seen[s.ID]:
			return fmt.Errorf("probe: plan: duplicate step id %q", s.ID)
		case len(s.Target) > maxTargetLen:
			return fmt.Errorf("probe: plan: step %q target longer than %d bytes", s.ID, maxTargetLen)
		case len(s.Hints) > maxHints:
			return fmt.Errorf("probe: plan: step %q has %d hints, at most %d", s.ID, len(s.Hints), maxHints)
		case len(s.Outside) > maxHints || len(s.Spare) > maxHints:
			return fmt.Errorf("probe: plan: step %q names more than %d outside namespaces or spared tables", s.ID, maxHints)
		}
		for _, h := range s.Hints {
			if len(h) > maxTargetLen || !strings.HasPrefix(h, "/") {
				return fmt.Errorf("probe: plan: step %q: a hint must be an absolute path of at most %d bytes", s.ID, maxTargetLen)
			}
		}
		seen[s.ID] = true
	}
	return nil
}

// ReadPlanStream reads a plan from r like ReadPlan, except that a plan with
// Control set may be followed by control lines (internal/probe/settle.go), which are left
// in the returned reader; without Control, anything after the plan but
// white space is an error, as for ReadPlan. The plan must not wait for EOF:
// the harness keeps stdin open after a controlled plan.
func ReadPlanStream(r io.Reader) (Plan, io.Reader, error) {
	lim := &io.LimitedReader{R: r, N: MaxPlanBytes + 1}
	dec := json.NewDecoder(lim)
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		if lim.N <= 0 {
			return Plan{}, nil, fmt.Errorf("probe: plan exceeds %d bytes", MaxPlanBytes)
		}
		return Plan{}, nil, fmt.Errorf("probe: decode plan: %w", err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, nil, err
	}
	rest := io.MultiReader(dec.Buffered(), r)
	if p.Control {
		return p, rest, nil
	}
	tail, err := io.ReadAll(io.LimitReader(rest, MaxPlanBytes))
	if err != nil {
		return Plan{}, nil, fmt.Errorf("probe: read plan: %w", err)
	}
	if len(bytes.TrimSpace(tail)) != 0 {
		return Plan{}, nil, errors.New("probe: decode plan: trailing data after the plan")
	}
	return p, nil, nil
}
