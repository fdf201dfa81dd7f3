// Package auditmon is Linux audit as a second detection source: for each
// registered session it adds audit rules keyed by the session's login uid
// (connect/sendto/sendmsg with their SOCKADDR, the opens with their PATH,
// execve), receives the records as the kernel's audit daemon, reassembles
// them by serial and delivers detect.Events normalised exactly like the
// auditd log parser of package alerts (the same record gives the same
// kind and object, read live or from a log).
//
// Audit rules are global kernel state that a killed process leaves behind:
// every rule carries the key "gatehouse-<pid>-<what>", Close removes its
// own, and the next Start (or 'gatehouse lab down', through Sweep) removes
// those of processes that are gone. Audit has one daemon: Start refuses,
// with *OwnedError, when another live process receives the records.
package auditmon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"
	"github.com/elastic/go-libaudit/v2/auparse"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/alerts"
)

// Errors a caller tells apart.
var (
	// ErrUnsupported: no audit here (not built in, not in the initial
	// namespaces, no CAP_AUDIT_CONTROL, locked configuration): the caller
	// runs without this source and says why.
	ErrUnsupported = errors.New("auditmon: audit unsupported here")
	// ErrClosed: the source was closed.
	ErrClosed = errors.New("auditmon: closed")
)

// OwnedError says another live process is the kernel's audit daemon.
// Gatehouse does not take the records from it (its rules and logs would
// go silent for the run).
type OwnedError struct {
	PID  int
	Comm string
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("auditmon: the kernel's audit records go to pid %d (%s), another audit daemon; "+
		"Gatehouse will not take them over: stop it for the run (e.g. systemctl stop auditd), "+
		"or read its log instead with --alerts audit:/var/log/audit/audit.log, or use --monitor builtin",
		e.PID, e.Comm)
}

// Source is a detect.Source and detect.Registrar backed by Linux audit.
type Source struct {
	pid int

	mu         sync.Mutex
	started    bool
	closed     bool
	ctl        *libaudit.AuditClient // rules and status; never receives records
	recv       *libaudit.AuditClient // the audit daemon's socket
	asm        *libaudit.Reassembler
	enabled0   bool                // audit was off before Start: turned back off at Close
	sessions   map[uint32][][]byte // login uid → its rules as added
	lost0      uint32              // the kernel's lost counter at Start
	kernelLost uint64              // records the kernel lost since, as last read

	events   chan detect.Event
	done     chan struct{}
	stop     context.CancelFunc
	wg       sync.WaitGroup
	dropped  atomic.Uint64 // lost: channel full, unparseable, kernel sequence gaps
	noObject atomic.Uint64 // records of our rules with no object to match (e.g. send on a connected socket)
}

var (
	_ detect.Source    = (*Source)(nil)
	_ detect.Registrar = (*Source)(nil)
)

// New prepares a source; nothing touches the kernel until Start. buffer is
// the Events channel's capacity (default 4096).
func New(buffer int) *Source {
	if buffer <= 0 {
		buffer = 4096
	}
	return &Source{pid: os.Getpid(), sessions: map[uint32][][]byte{}, events: make(chan detect.Event, buffer), done: make(chan struct{})}
}

// Name is the source name recorded in detect.Event.Source.
func (s *Source) Name() string { return alerts.FormatAudit }

// Start becomes the kernel's audit daemon (refusing if another live one
// is), removes rules that dead Gatehouse runs left, enables audit if it was
// off, and starts receiving. No rule is added until Register. ctx ending
// closes the source.
func (s *Source) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return errors.New("auditmon: already started")
	}
	ctl, st, err := control()
	if err != nil {
		return err
	}
	fail := func(err error) error { ctl.Close(); return err }
	if st.Enabled == 2 {
		return fail(fmt.Errorf("%w: the audit configuration is locked (enabled=2) until reboot", ErrUnsupported))
	}
	if err := checkOwner(int(st.PID), s.pid); err != nil {
		return fail(err)
	}
	if _, err := sweep(ctl, s.pid); err != nil {
		return fail(err)
	}
	if st, err = ctl.GetStatus(); err != nil { // the sweep may have turned audit off
		return fail(fmt.Errorf("auditmon: status: %w", err))
	}
	nl, err := newPollNetlink()
	if err != nil {
		return fail(unsupported(err))
	}
	recv := &libaudit.AuditClient{Netlink: nl}
	if err := recv.SetPID(libaudit.WaitForReply); err != nil {
		recv.Close()
		if errors.Is(err, syscall.EEXIST) {
			return fail(&OwnedError{PID: int(st.PID), Comm: comm(int(st.PID))})
		}
		return fail(unsupported(fmt.Errorf("become the audit daemon: %w", err)))
	}
	if st.Enabled == 0 {
		// Say so on disk first: a run killed before Close leaves audit on,
		// and the sweep turns it back off.
		if err := writeEnabledNote(s.pid); err != nil {
			recv.Close()
			return fail(err)
		}
		if err := ctl.SetEnabled(true, libaudit.WaitForReply); err != nil {
			recv.Close()
			removeEnabledNote(s.pid)
			return fail(unsupported(fmt.Errorf("enable audit: %w", err)))
		}
		s.enabled0 = true
	}
	asm, err := libaudit.NewReassembler(1024, time.Second, stream{s})
	if err != nil {
		recv.Close()
		return fail(err)
	}
	s.ctl, s.recv, s.asm, s.started = ctl, recv, asm, true
	s.lost0 = st.Lost
	ctx, s.stop = context.WithCancel(ctx)
	s.wg.Add(2)
	go s.read()
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				_ = s.shutdown(false)
				return
			case <-s.done:
				return
			case <-t.C:
				_ = asm.Maintain() // evicts events whose end never came
			}
		}
	}()
	return nil
}

// Preflight says, before a run starts anything, whether Start could
// succeed: audit is there, not locked, and no other live daemon owns it
// (*OwnedError). Start checks again.
func Preflight() error {
	ctl, st, err := control()
	if err != nil {
		return err
	}
	defer ctl.Close()
	if st.Enabled == 2 {
		return fmt.Errorf("%w: the audit configuration is locked (enabled=2) until reboot", ErrUnsupported)
	}
	return checkOwner(int(st.PID), os.Getpid())
}

// control opens a control socket and reads the audit status.
func control() (*libaudit.AuditClient, *libaudit.AuditStatus, error) {
	ctl, err := libaudit.NewAuditClient(nil)
	if err != nil {
		return nil, nil, unsupported(err)
	}
	st, err := ctl.GetStatus()
	if err != nil {
		ctl.Close()
		return nil, nil, unsupported(fmt.Errorf("audit status: %w", err))
	}
	return ctl, st, nil
}

// checkOwner refuses when a live process other than self is the daemon.
// A dead one's pid lingers in the status until the kernel next fails to
// send to it; it is no owner.
func checkOwner(owner, self int) error {
	if owner != 0 && owner != self && alive(owner) {
		return &OwnedError{PID: owner, Comm: comm(owner)}
	}
	return nil
}

func (s *Source) read() {
	defer s.wg.Done()
	defer close(s.events)
	defer s.asm.Close() // flushes what is in flight into Events
	for {
		msg, err := s.recv.Receive(false)
		if err != nil {
			if s.isClosed() {
				return
			}
			switch {
			case errors.Is(err, syscall.ENOBUFS): // the socket overflowed: records lost
				s.dropped.Add(1)
				continue
			case errors.Is(err, syscall.EINTR):
				continue
			}
			if errors.Is(err, os.ErrClosed) {
				return
			}
			s.dropped.Add(1)
			continue
		}
		// Only the records of syscall events (1300–1399), which the kernel
		// always ends with an EOE: a standalone record (a login, a config
		// change) never completes, and the reassembler would hold every
		// later event behind it until it expires. Acks and status replies
		// to our own requests are not records at all.
		if msg.Type < auparse.AUDIT_SYSCALL || msg.Type > 1399 || msg.Type == auparse.AUDIT_CONFIG_CHANGE ||
			!bytes.HasPrefix(msg.Data, []byte("audit(")) {
			continue
		}
		if err := s.asm.Push(msg.Type, msg.Data); err != nil {
			s.dropped.Add(1)
		}
	}
}

func (s *Source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// stream receives reassembled events.
type stream struct{ s *Source }

func (st stream) ReassemblyComplete(msgs []*auparse.AuditMessage) {
	e, ok := st.s.event(msgs, time.Now())
	if !ok {
		return
	}
	select {
	case st.s.events <- e:
	default:
		st.s.dropped.Add(1)
	}
}

// EventsLost reports gaps in the serials, which are expected here (the
// records not passed on above have serials too): the kernel's own lost
// counter is what Dropped reads instead.
func (st stream) EventsLost(int) {}

// event turns one reassembled group into an Event: only groups of this
// process's rules with an object give one.
func (s *Source) event(msgs []*auparse.AuditMessage, received time.Time) (detect.Event, bool) {
	e, err := alerts.AuditGroup(groupLines(msgs), received)
	if err != nil {
		s.dropped.Add(1)
		return e, false
	}
	pid, what, ok := parseKey(e.Rule)
	if !ok || pid != s.pid {
		return e, false // another tool's rule: we are the daemon, its records reach us too
	}
	if e.Kind == "" || e.Object == "" {
		s.noObject.Add(1)
		return e, false
	}
	e.Rule = what
	return e, true
}

// groupLines writes records as auditd log lines ("type=SYSCALL
// msg=audit(…): …"), the form package alerts normalises.
func groupLines(msgs []*auparse.AuditMessage) []byte {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("type=")
		b.WriteString(m.RecordType.String())
		b.WriteString(" msg=")
		b.WriteString(strings.TrimRight(m.RawData, "\x00\n"))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// Events delivers events; closed after Close.
func (s *Source) Events() <-chan detect.Event { return s.events }

// Dropped counts events lost: unparseable groups, the Events channel
// full, the socket overflowing, and the records the kernel itself lost
// since Start (backlog full, rate limit): while the source is the daemon,
// every record is meant for it.
func (s *Source) Dropped() uint64 {
	n := s.dropped.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctl != nil && !s.closed {
		if st, err := s.ctl.GetStatus(); err == nil && st.Lost > s.lost0 {
			s.kernelLost = uint64(st.Lost - s.lost0)
		}
	}
	return n + s.kernelLost
}

// NoObject counts records of the source's rules with nothing to match
// (a send on a connected socket has no SOCKADDR): seen, not deliverable.
func (s *Source) NoObject() uint64 { return s.noObject.Load() }

// Register adds the rules that watch the session with login uid k.LoginUID.
func (s *Source) Register(k detect.SessionKey) error {
	if k.LoginUID == 0 || k.LoginUID == 4294967295 {
		return errors.New("the audit source watches sessions by login uid, and this one has none")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.closed {
		return ErrClosed
	}
	if _, ok := s.sessions[k.LoginUID]; ok {
		return nil
	}
	rules, err := sessionRules(s.pid, k.LoginUID)
	if err != nil {
		return err
	}
	for i, r := range rules {
		if err := s.ctl.AddRule(r); err != nil {
			for _, added := range rules[:i] {
				_ = s.ctl.DeleteRule(added)
			}
			return fmt.Errorf("auditmon: add rule: %w", err)
		}
	}
	s.sessions[k.LoginUID] = rules
	return nil
}

// Unregister removes the session's rules.
func (s *Source) Unregister(k detect.SessionKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rules, ok := s.sessions[k.LoginUID]
	if !ok || s.ctl == nil {
		return
	}
	for _, r := range rules {
		_ = s.ctl.DeleteRule(r)
	}
	delete(s.sessions, k.LoginUID)
}

// Close removes every rule the source added, turns audit back off if it
// was off, and gives up the daemon's place; safe twice.
func (s *Source) Close() error { return s.shutdown(true) }

func (s *Source) shutdown(wait bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if wait {
			s.wg.Wait()
		}
		return nil
	}
	s.closed = true
	started := s.started
	var errs []error
	if s.ctl != nil {
		for auid, rules := range s.sessions {
			for _, r := range rules {
				errs = append(errs, s.ctl.DeleteRule(r))
			}
			delete(s.sessions, auid)
		}
		// By key as well: whatever this process added and lost track of.
		_, err := sweep(s.ctl, -s.pid)
		errs = append(errs, err)
		if s.enabled0 {
			errs = append(errs, s.ctl.SetEnabled(false, libaudit.WaitForReply))
			removeEnabledNote(s.pid)
		}
	}
	if s.recv != nil {
		errs = append(errs, s.recv.Close()) // clears the daemon pid, wakes read()
	}
	close(s.done)
	if s.stop != nil {
		s.stop()
	}
	ctl := s.ctl
	s.mu.Unlock()
	if !started {
		close(s.events)
	}
	if wait {
		s.wg.Wait()
	}
	if ctl != nil {
		errs = append(errs, ctl.Close())
	}
	return errors.Join(errs...)
}

// sweep removes the rules of dead Gatehouse processes (and, with self
// negative, those of process -self): it returns their auditctl texts. For
// a dead process that had turned audit on, it turns audit off again when
// no other Gatehouse rule remains and no live daemon relies on it.
func sweep(ctl *libaudit.AuditClient, self int) ([]string, error) {
	rules, err := ctl.GetRules()
	if err != nil {
		return nil, fmt.Errorf("auditmon: list rules: %w", err)
	}
	var removed []string
	remaining := 0
	var errs []error
	for _, r := range rules {
		k, text := ruleKey(r)
		pid, _, ok := parseKey(k)
		if !ok {
			continue
		}
		if pid == -self || (self > 0 && pid != self && !alive(pid)) {
			if err := ctl.DeleteRule(r); err != nil {
				errs = append(errs, fmt.Errorf("auditmon: remove %q: %w", text, err))
				remaining++
				continue
			}
			removed = append(removed, text)
			continue
		}
		remaining++
	}
	if self > 0 {
		for _, pid := range enabledNotes() {
			if pid == self || alive(pid) {
				continue
			}
			st, err := ctl.GetStatus()
			if err == nil && remaining == 0 && st.Enabled == 1 && (st.PID == 0 || !alive(int(st.PID))) {
				errs = append(errs, ctl.SetEnabled(false, libaudit.WaitForReply))
			}
			removeEnabledNote(pid)
		}
	}
	return removed, errors.Join(errs...)
}

// Sweep removes what dead Gatehouse audit sources left (rules, audit left
// on) and returns the removed rules' texts; ErrUnsupported where there is
// no audit to sweep.
func Sweep(ctx context.Context) ([]string, error) {
	ctl, _, err := control()
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	return sweep(ctl, os.Getpid())
}

// Leftover lists the audit rules of any Gatehouse process (live or dead)
// in the kernel now, as auditctl text: what a leftover check reports.
func Leftover() ([]string, error) {
	ctl, _, err := control()
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	rules, err := ctl.GetRules()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rules {
		if k, text := ruleKey(r); strings.HasPrefix(k, KeyPrefix) {
			out = append(out, text)
		}
	}
	return out, nil
}

// Status is the kernel's audit state, for tests and messages.
func Status() (enabled uint32, daemonPID int, err error) {
	ctl, st, err := control()
	if err != nil {
		return 0, 0, err
	}
	ctl.Close()
	return st.Enabled, int(st.PID), nil
}

// The note a source leaves while it has turned audit on.
const noteDir = "/run/gatehouse/audit"

func notePath(pid int) string { return noteDir + "/enabled-by-" + strconv.Itoa(pid) }

func writeEnabledNote(pid int) error {
	if err := os.MkdirAll(noteDir, 0o755); err != nil {
		return fmt.Errorf("auditmon: %w", err)
	}
	if err := os.WriteFile(notePath(pid), []byte("audit was off (enabled=0) before this process turned it on\n"), 0o644); err != nil {
		return fmt.Errorf("auditmon: %w", err)
	}
	return nil
}

func removeEnabledNote(pid int) { _ = os.Remove(notePath(pid)) }

func enabledNotes() []int {
	ents, _ := os.ReadDir(noteDir)
	var pids []int
	for _, e := range ents {
		if p, ok := strings.CutPrefix(e.Name(), "enabled-by-"); ok {
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func comm(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func unsupported(err error) error {
	for _, e := range []error{syscall.EPERM, syscall.EACCES, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT, syscall.EINVAL, syscall.ECONNREFUSED} {
		if errors.Is(err, e) {
			return fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
	}
	if strings.Contains(err.Error(), "not supported") {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return fmt.Errorf("auditmon: %w", err)
}
