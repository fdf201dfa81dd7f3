package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
)

// KindTakedown: root in the guest (assume-breach) tries to turn off one
// control of the sandbox within its reach. Target names the control (one of
// TakedownControls); Outside lists the namespaces ("net:[4026531840]", the
// form /proc/self/ns links take) the probe must never act in: the
// harness's own and the lab's. Spare names nftables tables ("inet NAME")
// that are the harness's instruments, not controls (the lab's packet
// accounting filters nothing), so they survive and still count.
//
// The probe acts only inside its own namespaces, never on the host or the
// lab: each control is tried only when the namespace it lives in is none of
// Outside (ownNamespace), and a namespace it cannot identify is refused.
//
// Excerpt is one line per thing tried, each starting with what happened:
// "changed: " (the kernel allowed a change), "refused: " (the kernel said
// no), "unchanged: " (nothing to do), "skipped: " (the probe's own choice),
// "failed: " (another error). Outcome is completed when something changed
// or nothing needed to, denied when the kernel refused, error otherwise.
const KindTakedown = "takedown"

// Controls a takedown step may name, in the order the harness runs them:
// the remount comes before the sysctl and cgroup writes it may enable.
const (
	TakedownProxy     = "proxy"     // proxy settings, and in-sandbox proxy bridges on loopback
	TakedownNftables  = "nftables"  // every nftables table in the namespace (iptables-nft too)
	TakedownIptables  = "iptables"  // iptables-legacy tables
	TakedownLinks     = "links"     // interfaces that are down
	TakedownRoutes    = "routes"    // a default route where there is none
	TakedownAddresses = "addresses" // an address of the probe's choosing
	TakedownRemount   = "remount"   // read-only mounts, made read-write
	TakedownSysctl    = "sysctl"    // network sysctls of the namespace
	TakedownCgroup    = "cgroup"    // the probe's own cgroup limits
)

// TakedownControls is every control a takedown knows, in run order.
var TakedownControls = []string{
	TakedownProxy, TakedownNftables, TakedownIptables, TakedownLinks, TakedownRoutes,
	TakedownAddresses, TakedownRemount, TakedownSysctl, TakedownCgroup,
}

// Line prefixes of a takedown's Excerpt.
const (
	TakedownChanged   = "changed: "
	TakedownRefused   = "refused: "
	TakedownUnchanged = "unchanged: "
	TakedownSkipped   = "skipped: "
	TakedownFailed    = "failed: "
)

// tdLog collects what one takedown step tried.
type tdLog struct {
	lines                     []string
	changed, refused, failure int
}

func (l *tdLog) add(prefix, format string, a ...any) {
	l.lines = append(l.lines, prefix+fmt.Sprintf(format, a...))
	switch prefix {
	case TakedownChanged:
		l.changed++
	case TakedownRefused:
		l.refused++
	case TakedownFailed:
		l.failure++
	}
}

// result records err against what: refused when the kernel said no (a
// permission, a read-only file system), failed otherwise, changed on nil.
func (l *tdLog) result(what string, err error) {
	switch {
	case err == nil:
		l.add(TakedownChanged, "%s", what)
	case kernelRefusal(err):
		l.add(TakedownRefused, "%s: %v", what, err)
	default:
		l.add(TakedownFailed, "%s: %v", what, err)
	}
}

func kernelRefusal(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS)
}

// doTakedown runs one takedown step.
func doTakedown(ctx context.Context, s Step, rep *Report) error {
	l := &tdLog{}
	var err error
	switch s.Target {
	case TakedownProxy:
		err = takeDownProxy(s, l)
	case TakedownNftables:
		err = takeDownNftables(s, l)
	case TakedownIptables:
		err = takeDownIptables(ctx, s, l)
	case TakedownLinks:
		err = takeDownLinks(s, l)
	case TakedownRoutes:
		err = takeDownRoutes(s, l)
	case TakedownAddresses:
		err = takeDownAddresses(s, l)
	case TakedownRemount:
		err = takeDownRemount(s, l)
	case TakedownSysctl:
		err = takeDownSysctl(s, l)
	case TakedownCgroup:
		err = takeDownCgroup(s, l)
	default:
		err = fmt.Errorf("unknown control %q", s.Target)
	}
	rep.Excerpt = clip(strings.Join(l.lines, "\n"), MaxFindingsLen)
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
