package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// Takedowns: root in the guest tries to turn off one control of the
// sandbox (wire.KindTakedown says what a step asks and what its report
// says), acting only inside its own namespaces, never on the host or the
// lab: each control is tried only when the namespace it lives in is none
// of Step.Outside (ownNamespace), and one it cannot identify is refused.

// tdLog collects what one takedown step tried.
type tdLog struct {
	lines                     []string
	changed, refused, failure int
}

func (l *tdLog) add(prefix, format string, a ...any) {
	l.lines = append(l.lines, prefix+fmt.Sprintf(format, a...))
	switch prefix {
	case wire.TakedownChanged:
		l.changed++
	case wire.TakedownRefused:
		l.refused++
	case wire.TakedownFailed:
		l.failure++
	}
}

// result records err against what: refused when the kernel said no (a
// permission, a read-only file system), failed otherwise, changed on nil.
func (l *tdLog) result(what string, err error) {
	switch {
	case err == nil:
		l.add(wire.TakedownChanged, "%s", what)
	case kernelRefusal(err):
		l.add(wire.TakedownRefused, "%s: %v", what, err)
	default:
		l.add(wire.TakedownFailed, "%s: %v", what, err)
	}
}

func kernelRefusal(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS)
}

// doTakedown runs one takedown step.
func doTakedown(ctx context.Context, s wire.Step, rep *wire.Report) error {
	l := &tdLog{}
	var err error
	switch s.Target {
	case wire.TakedownProxy:
		err = takeDownProxy(s, l)
	case wire.TakedownNftables:
		err = takeDownNftables(s, l)
	case wire.TakedownIptables:
		err = takeDownIptables(ctx, s, l)
	case wire.TakedownLinks:
		err = takeDownLinks(s, l)
	case wire.TakedownRoutes:
		err = takeDownRoutes(s, l)
	case wire.TakedownAddresses:
		err = takeDownAddresses(s, l)
	case wire.TakedownRemount:
		err = takeDownRemount(s, l)
	case wire.TakedownSysctl:
		err = takeDownSysctl(s, l)
	case wire.TakedownCgroup:
		err = takeDownCgroup(s, l)
	default:
		err = fmt.Errorf("unknown control %q", s.Target)
	}
	rep.Excerpt = clip(strings.Join(l.lines, "\n"), wire.MaxFindingsLen)
	if err != nil {
		return err
	}
	return l.err()
}

// err is the step's outcome as an error: nil when something changed or
// nothing needed to, a kernel refusal (denied) when the kernel refused
// every change, a plain error when the tries failed otherwise.
func (l *tdLog) err() error {
	switch {
	case l.changed > 0:
		return nil
	case l.refused > 0:
		return errRefusedByKernel
	case l.failure > 0:
		return errors.New("every try failed (see excerpt)")
	}
	return nil
}

// errRefusedByKernel makes a takedown whose every try the kernel refused
// a denied report (classify maps EPERM to denied).
var errRefusedByKernel = fmt.Errorf("the kernel refused every change: %w", syscall.EPERM)

// ownNamespace refuses (errRefused, a denied report whose Error starts with
// RefusePrefix) unless the probe's namespace of kind is readable and none
// of outside, which must name at least one namespace of that kind: without
// one the probe cannot tell its own namespace from the host's.
func ownNamespace(kind string, outside []string) error {
	known := false
	for _, o := range outside {
		known = known || strings.HasPrefix(o, kind+":[")
	}
	if !known {
		return errRefused("the plan names no " + kind + " namespace to stay out of, so this one cannot be told from the host's")
	}
	link, err := os.Readlink("/proc/self/ns/" + kind)
	if err != nil {
		return errRefused(kind + " namespace unreadable (" + err.Error() + "), so it cannot be told from the host's")
	}
	for _, o := range outside {
		if o == link {
			return errRefused(kind + " namespace " + link + " is not the sandbox's own (the harness's or the lab's)")
		}
	}
	return nil
}

// sortedKeys is m's keys in order, for stable excerpts.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
