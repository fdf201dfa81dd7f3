package steps

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// retrySuffix ends the IDs of the attempts tried again after the takedown.
const retrySuffix = "@after-takedown"

// takedownStepTimeout bounds each control's takedown inside the probe.
const takedownStepTimeout = 5 * time.Second

// takeDown is assume-breach meant literally: root in the guest first tries
// to turn off every control within its reach (wire.KindTakedown, one step
// per control, in order), then every attempt the scenario made is made
// again. On the normal path the agent is the profile's unprivileged user,
// so the step only records that it did not run.
func (r *runner) takeDown(ctx context.Context) error {
	s := current(ctx)
	if s == nil || s.sess == nil {
		return errors.New("no session: a 'fresh sandbox session' step must come first")
	}
	if s.path != targets.PathBreach {
		s.findings = append(s.findings, "takedown: not run on the normal path (the agent is the profile's unprivileged user); root in the guest attacks the controls on the assume-breach path")
		return nil
	}
	if len(s.tries) == 0 {
		return errors.New("nothing to try again: a 'tries each of these ways' step must come first")
	}
	td := &evidence.Takedown{}
	before, berr := r.sessionTables(ctx, s)
	td.At = time.Now()
	p := wire.Plan{TimeoutMS: int(takedownStepTimeout / time.Millisecond), Parallel: 1}
	outside := r.outsideNamespaces()
	for _, c := range wire.TakedownControls {
		p.Steps = append(p.Steps, wire.Step{ID: "takedown-" + c, Kind: wire.KindTakedown, Target: c,
			Outside: outside, Spare: []string{lab.AccountingTable}})
	}
	reps, err := r.runPlan(ctx, s, p, time.Duration(len(p.Steps)+2)*takedownStepTimeout)
	if err != nil {
		return err
	}
	td.Controls, td.Missing = takedownControls(reps)
	after, aerr := r.sessionTables(ctx, s)
	if err := cmp.Or(berr, aerr); err != nil {
		td.OutsideError = err.Error()
	} else {
		td.Outside = &evidence.RulesetView{Before: before, After: after}
	}
	s.takedown = td
	s.findings = append(s.findings, takedownFindings(td)...)
	s.findings = append(s.findings, reachFindings(td, r.cfg.BreachReach)...)
	for _, t := range s.tries {
		if err := r.attempt(ctx, s, t.family, t.names, retrySuffix); err != nil {
			return err
		}
	}
	return nil
}

// outsideNamespaces are the namespaces the probe must never act in: the
// harness's own (the machine's, for the run) and the lab's network.
func (r *runner) outsideNamespaces() []string {
	var out []string
	for _, kind := range []string{"net", "mnt", "pid", "cgroup", "ipc", "uts", "user"} {
		if l, err := os.Readlink("/proc/self/ns/" + kind); err == nil {
			out = append(out, l)
		}
	}
	if r.cfg.LabNetns != "" {
		var st syscall.Stat_t
		if err := syscall.Stat(r.cfg.LabNetns, &st); err == nil {
			out = append(out, fmt.Sprintf("net:[%d]", st.Ino))
		}
	}
	return out
}

// sessionTables lists the session namespace's tables from outside.
func (r *runner) sessionTables(ctx context.Context, s *scenario) ([]string, error) {
	const cannot = "the harness cannot list the session's nftables tables from outside"
	if !s.attached {
		return nil, errors.New(cannot + " (no lab session namespace)")
	}
	tables, err := r.lab().Tables(ctx, s.session)
	if errors.Is(err, ErrUnsupported) {
		return nil, fmt.Errorf("%s: %w", cannot, err)
	}
	return tables, err
}

// takedownControls reads the probe's takedown reports (hostile: they only
// say what was claimed) into one record per control, and lists the
// controls with no report.
func takedownControls(reps []wire.Report) ([]evidence.ControlTakedown, []string) {
	byID := map[string]wire.Report{}
	for _, rep := range reps {
		byID[rep.ID] = rep
	}
	var out []evidence.ControlTakedown
	var missing []string
	for _, c := range wire.TakedownControls {
		rep, ok := byID["takedown-"+c]
		if !ok {
			missing = append(missing, c)
			continue
		}
		ct := evidence.ControlTakedown{Control: c, Error: rep.Error}
		for _, line := range strings.Split(rep.Excerpt, "\n") {
			switch {
			case strings.HasPrefix(line, wire.TakedownChanged):
				ct.Changed = append(ct.Changed, strings.TrimPrefix(line, wire.TakedownChanged))
			case strings.HasPrefix(line, wire.TakedownRefused):
				ct.Refused = append(ct.Refused, strings.TrimPrefix(line, wire.TakedownRefused))
			case line != "":
				ct.Other = append(ct.Other, line)
			}
		}
		switch {
		case strings.HasPrefix(rep.Error, wire.RefusePrefix):
			ct.State = evidence.TakedownNotTried
		case len(ct.Changed) > 0:
			ct.State = evidence.TakedownFell
		case rep.Outcome == wire.OutcomeDenied:
			ct.State = evidence.TakedownHeld
		case rep.Outcome == wire.OutcomeCompleted:
			ct.State = evidence.TakedownNothing
		default:
			ct.State = evidence.TakedownUncertain
		}
		out = append(out, ct)
	}
	return out, missing
}

// takedownFindings says, per control, what root in the guest got done.
func takedownFindings(td *evidence.Takedown) []string {
	var out []string
	for _, c := range td.Controls {
		detail := c.Changed
		switch c.State {
		case evidence.TakedownHeld:
			detail = c.Refused
		case evidence.TakedownNotTried:
			detail = c.Other // the probe's "skipped:" line says why
			if len(detail) == 0 {
				detail = []string{c.Error}
			}
		case evidence.TakedownUncertain:
			detail = append([]string{c.Error}, c.Other...)
		case evidence.TakedownNothing:
			detail = c.Other
		}
		out = append(out, fmt.Sprintf("takedown %s (root in the guest): %s: %s", c.Control, c.State, strings.Join(detail, "; ")))
	}
	for _, m := range td.Missing {
		out = append(out, "takedown "+m+": no report from the probe")
	}
	if v := td.Outside; v != nil {
		out = append(out, fmt.Sprintf("takedown: the session's nftables tables seen from outside: before [%s], after [%s]", strings.Join(v.Before, ", "), strings.Join(v.After, ", ")))
	} else {
		out = append(out, "takedown: "+td.OutsideError+": which layer fell rests on the probe's report")
	}
	out = append(out, td.Contradicted()...)
	return out
}

// planControl names the run plan's control (internal/targets/profile/controls.go)
// each takedown tests.
var planControl = map[string]string{
	wire.TakedownNftables: "egress ruleset", wire.TakedownIptables: "egress ruleset",
	wire.TakedownLinks: "network namespace, addresses and routes", wire.TakedownRoutes: "network namespace, addresses and routes",
	wire.TakedownAddresses: "network namespace, addresses and routes", wire.TakedownSysctl: "network namespace, addresses and routes",
	wire.TakedownRemount: "mounts (binds and read-only flags)",
	wire.TakedownCgroup:  "resource limits",
}

// reachFindings hold the plan's word on where each control lives against
// what root in the guest got done: a control the plan puts outside the
// guest's reach that fell means the plan is wrong, and one it puts inside
// that the kernel kept is worth knowing too.
func reachFindings(td *evidence.Takedown, reach map[string]string) []string {
	fell, held := map[string][]string{}, map[string][]string{}
	for _, c := range td.Controls {
		name, ok := planControl[c.Control]
		if !ok || reach[name] == "" {
			continue
		}
		f := c.State == evidence.TakedownFell
		if c.Control == wire.TakedownNftables && td.Outside != nil {
			f = len(td.Outside.Removed()) > 0 // the harness's own view decides
		}
		switch {
		case f:
			fell[name] = append(fell[name], c.Control)
		case c.State == evidence.TakedownHeld:
			held[name] = append(held[name], c.Control)
		}
	}
	var out []string
	for _, name := range sortedNames(reach) {
		switch r := reach[name]; {
		case len(fell[name]) > 0 && r != "inside":
			out = append(out, fmt.Sprintf("plan wrong: the plan puts the %s outside the guest's reach on the assume-breach path, yet root in the guest took it down (%s)", name, strings.Join(fell[name], ", ")))
		case len(fell[name]) > 0:
			out = append(out, fmt.Sprintf("plan confirmed: the %s is within the guest's reach on the assume-breach path: root in the guest took it down (%s)", name, strings.Join(fell[name], ", ")))
		case len(held[name]) > 0 && r == "inside":
			out = append(out, fmt.Sprintf("plan not borne out: the plan puts the %s within the guest's reach on the assume-breach path, but the kernel refused root's takedown (%s)", name, strings.Join(held[name], ", ")))
		}
	}
	return out
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
