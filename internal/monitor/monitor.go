// Package monitor is Gatehouse's own eBPF monitor: two raw tracepoint
// programs assembled in Go (no clang, no committed object). The one on
// sys_enter ships connect, sendto/sendmsg (with destination and the first
// bytes of the payload), writes on sockets connected to port 53,
// openat/openat2 and execve of the registered sessions' cgroups through a
// ring buffer; the one on sched_process_exit ships their tasks' exits. It
// is a detect.Source: each record becomes a detect.Event named by the rule
// it fired (rules are data, see rules.go).
//
// After a session's stop (the response):
//
//   - MarkStopped(cgroupID, at): the first syscall of each of the cgroup's
//     processes from at on is an event of kind detect.KindAliveAfter (rule
//     process-alive-after-stop, Object the process's name), once per
//     process; the cgroup stays registered until Unregister.
//   - Exits: every task exit of a registered cgroup is counted; whole
//     processes' exits are delivered as detect.KindExit events (Object the
//     pid, never a rule hit, never matched to an attempt) for stopped
//     cgroups, or for all with Options.Exits.
//   - LastExit(ctx, cgroupID) answers "when were the session's processes
//     gone, on the kernel's word": detect.Exits{Exits, Last, LastPID,
//     Empty}; Gone() holds once the cgroup is empty (cgroup.events), Last
//     being the kernel time of the final exit (the ring is read up to the
//     moment of the question first: Sync).
//
// Lost records are counted by reason (DropCounts).
//
// Everything it loads is owned by file descriptors: Close, or the death of
// the process, leaves nothing attached.
package monitor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// Errors a caller tells apart.
var (
	// ErrUnsupported: this kernel or machine cannot run the monitor (no
	// BPF, no permission, no syscall table for the architecture): the
	// caller skips detection with the reason, it does not report a miss.
	ErrUnsupported = errors.New("monitor: unsupported here")
	// ErrClosed: the monitor was closed.
	ErrClosed = errors.New("monitor: closed")
)

// Options configure a Monitor. The zero value watches only registered
// cgroups, with the built-in rules, delivering only events a rule fired on.
type Options struct {
	// AllCgroups ships every process's activity (not just registered
	// cgroups). For measurements; a real run registers its sessions.
	AllCgroups bool
	// WatchSelf also ships this process's own syscalls (ignored by default
	// so the monitor does not observe its own reads).
	WatchSelf bool
	// Rules: nil means the built-in rules (DefaultRules).
	Rules *Rules
	// Params fill the rules' $variables (allowed endpoints, resolver,
	// planted credential paths).
	Params Params
	// All delivers every decoded event, also those no rule fired on (Rule
	// empty). Default: only rule hits.
	All bool
	// Exits delivers every process exit of a registered cgroup as a
	// KindExit event (so does All). Without it, only the exits of cgroups
	// marked stopped are delivered; LastExit knows every exit regardless.
	Exits bool
	// Buffer is the Events channel's capacity (default 4096); RingBytes
	// the kernel ring buffer's size (default 1 MiB, a power of two).
	Buffer    int
	RingBytes uint32
}

// Monitor is a detect.Source backed by the sys_enter program.
type Monitor struct {
	opts  Options
	rules *Rules

	mu      sync.Mutex
	started bool
	closed  bool
	m       maps
	prog    *ebpf.Program
	link    link.Link
	exitP   *ebpf.Program
	exitL   link.Link
	reader  *ringbuf.Reader
	events  chan detect.Event
	done    chan struct{}
	stop    context.CancelFunc
	wg      sync.WaitGroup
	dropped atomic.Uint64 // events lost in user space (channel full)
	unread  atomic.Uint64 // paths the kernel could not read (not paged in)
	bootOff time.Duration // wall clock − CLOCK_MONOTONIC, for EventTime

	// Registered cgroups, as user space keeps them (under mu): what a
	// session's processes did at their end.
	cgroups map[uint64]*cgState
	stopped uint32 // how many of them are marked stopped (mirrors the config map)
	cfg     [configSize]byte

	syncMu sync.Mutex    // one Sync at a time
	synced chan struct{} // closed by read() on the reader's ErrFlushed
}

// cgState is one registered cgroup's exit bookkeeping.
type cgState struct {
	dir     string // its directory, when registered by path
	stopped time.Time
	exits   detect.Exits
}

var _ detect.Source = (*Monitor)(nil)

// New prepares a monitor; nothing is loaded until Start.
func New(opts Options) (*Monitor, error) {
	if opts.Buffer <= 0 {
		opts.Buffer = 4096
	}
	if opts.RingBytes == 0 {
		opts.RingBytes = 1 << 20
	}
	if opts.RingBytes&(opts.RingBytes-1) != 0 || opts.RingBytes < uint32(os.Getpagesize()) {
		return nil, fmt.Errorf("monitor: ring size %d is not a power of two of at least a page", opts.RingBytes)
	}
	r := opts.Rules
	if r == nil {
		var err error
		if r, err = DefaultRules(); err != nil {
			return nil, err
		}
	}
	return &Monitor{opts: opts, rules: r, events: make(chan detect.Event, opts.Buffer), done: make(chan struct{}), cgroups: map[uint64]*cgState{}}, nil
}

// Name is the source name recorded in detect.Event.Source.
func (mo *Monitor) Name() string { return "builtin" }

// Rules returns the rules in force (their Digest goes into the evidence).
func (mo *Monitor) Rules() *Rules { return mo.rules }

// Start loads and attaches the program and starts reading. ctx ending
// closes the monitor.
func (mo *Monitor) Start(ctx context.Context) error {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.closed {
		return ErrClosed
	}
	if mo.started {
		return errors.New("monitor: already started")
	}
	a, err := nativeABI()
	if err != nil {
		return err
	}
	m, err := newMaps(mo.opts.RingBytes)
	if err != nil {
		return unsupported(err)
	}
	var filter, self uint32 = 1, uint32(os.Getpid())
	if mo.opts.AllCgroups {
		filter = 0
	}
	if mo.opts.WatchSelf {
		self = 0 // no tgid is 0
	}
	binary.LittleEndian.PutUint32(mo.cfg[0:], filter)
	binary.LittleEndian.PutUint32(mo.cfg[4:], self)
	if err := m.config.Put(uint32(0), mo.cfg[:]); err != nil {
		m.close()
		return fmt.Errorf("monitor: config: %w", err)
	}
	luOff, groupDead := kernelLayout()
	// Undone in reverse on any failure: nothing stays loaded.
	var undo []func() error
	fail := func(err error) error {
		for i := len(undo) - 1; i >= 0; i-- {
			_ = undo[i]()
		}
		m.close()
		return err
	}
	load := func(name string, ins asm.Instructions, tp string) (*ebpf.Program, link.Link, error) {
		prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
			Name:         name,
			Type:         ebpf.RawTracepoint,
			License:      "GPL", // the probe_read and ringbuf helpers are GPL-only
			Instructions: ins,
		}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
		if err != nil {
			return nil, nil, unsupported(fmt.Errorf("load %s: %w", name, err))
		}
		undo = append(undo, prog.Close)
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
		if err != nil {
			return nil, nil, unsupported(fmt.Errorf("attach %s: %w", tp, err))
		}
		undo = append(undo, l.Close)
		return prog, l, nil
	}
	prog, l, err := load(programName, instructions(a, m, luOff), "sys_enter")
	if err != nil {
		return fail(err)
	}
	exitP, exitL, err := load(exitProgramName, exitInstructions(m, luOff, groupDead), "sched_process_exit")
	if err != nil {
		return fail(err)
	}
	rd, err := ringbuf.NewReader(m.events)
	if err != nil {
		return fail(fmt.Errorf("monitor: ring reader: %w", err))
	}
	mo.m, mo.prog, mo.link, mo.exitP, mo.exitL, mo.reader = m, prog, l, exitP, exitL, rd
	mo.bootOff = monotonicOffset()
	mo.started = true

	ctx, mo.stop = context.WithCancel(ctx)
	mo.wg.Add(2)
	go mo.read()
	go func() {
		defer mo.wg.Done()
		select {
		case <-ctx.Done():
			_ = mo.shutdown(false)
		case <-mo.done:
		}
	}()
	return nil
}

// KernelIDs are the kernel's ids of what the monitor loaded, for leftover
// checks: after Close or the process's death none of them may exist.
type KernelIDs struct {
	Programs []ebpf.ProgramID
	Links    []link.ID
	Maps     []ebpf.MapID
}

// IDs returns the ids of the loaded programs, links and maps.
func (mo *Monitor) IDs() (KernelIDs, error) {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.prog == nil {
		return KernelIDs{}, ErrClosed
	}
	var ids KernelIDs
	for _, p := range []*ebpf.Program{mo.prog, mo.exitP} {
		info, err := p.Info()
		if err != nil {
			return ids, err
		}
		id, ok := info.ID()
		if !ok {
			return ids, fmt.Errorf("%w: program id not reported", ErrUnsupported)
		}
		ids.Programs = append(ids.Programs, id)
	}
	for _, l := range []link.Link{mo.link, mo.exitL} {
		info, err := l.Info()
		if err != nil {
			return ids, err
		}
		ids.Links = append(ids.Links, info.ID)
	}
	for _, mp := range mo.m.all() {
		mi, err := mp.Info()
		if err != nil {
			return ids, err
		}
		if id, ok := mi.ID(); ok {
			ids.Maps = append(ids.Maps, id)
		}
	}
	return ids, nil
}

func (mo *Monitor) read() {
	defer mo.wg.Done()
	defer close(mo.events)
	var rec ringbuf.Record
	for {
		if err := mo.reader.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrFlushed) {
				// Every record in the ring when Sync flushed it has
				// been handled: in order, by this goroutine.
				mo.mu.Lock()
				if mo.synced != nil {
					close(mo.synced)
					mo.synced = nil
				}
				mo.mu.Unlock()
				continue
			}
			return // closed
		}
		received := time.Now()
		raw := append([]byte(nil), rec.RawSample...)
		e, ok, unreadable := mo.decode(raw, received)
		if unreadable {
			mo.unread.Add(1)
		}
		if !ok {
			continue
		}
		select {
		case mo.events <- e:
		default:
			mo.dropped.Add(1)
		}
	}
}

func (mo *Monitor) decode(raw []byte, received time.Time) (detect.Event, bool, bool) {
	r, err := parseRecord(raw)
	if err != nil {
		return detect.Event{}, false, false
	}
	o, ok := r.observation()
	if !ok {
		return detect.Event{}, false, r.unreadable()
	}
	at := mo.wallTime(r.ktime)
	rule := ""
	switch o.Kind {
	case detect.KindExit:
		// A life-cycle record, never a rule hit: it feeds LastExit, and
		// is delivered (whole processes only) for a stopped cgroup or
		// when asked.
		stopped := mo.noteExit(r, at)
		if r.fd == 0 || (r.fd == 2 && r.pid() != r.tgid()) || !(stopped || mo.opts.Exits || mo.opts.All) {
			return detect.Event{}, false, false
		}
	default:
		rule = mo.rules.Evaluate(o, mo.opts.Params)
		if rule == "" && !mo.opts.All {
			return detect.Event{}, false, false
		}
	}
	return detect.Event{
		Source: "builtin",
		Rule:   rule,
		Kind:   o.Kind,
		Object: o.Object,
		Key: detect.SessionKey{
			CgroupID: r.cgroup,
			LoginUID: r.loginuid,
			PID:      r.tgid(),
		},
		EventTime: at,
		Received:  received,
		Raw:       raw,
	}, true, false
}

// wallTime converts a ktime_get_ns reading to the wall clock.
func (mo *Monitor) wallTime(ktime uint64) time.Time {
	return time.Unix(0, 0).Add(mo.bootOff + time.Duration(ktime))
}

// noteExit records a task's exit against its registered cgroup; it says
// whether that cgroup is marked stopped.
func (mo *Monitor) noteExit(r record, at time.Time) bool {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	st, ok := mo.cgroups[r.cgroup]
	if !ok {
		return false
	}
	st.exits.Exits++
	if at.After(st.exits.Last) {
		st.exits.Last, st.exits.LastPID = at, r.tgid()
	}
	return !st.stopped.IsZero()
}

// Events delivers decoded events; closed after Close.
func (mo *Monitor) Events() <-chan detect.Event { return mo.events }

// Drops is why events were lost.
type Drops struct {
	RingFull       uint64 `json:"ring_full"`       // the kernel's ring buffer had no room
	AddrUnreadable uint64 `json:"addr_unreadable"` // connect/send: the destination could not be read from the caller's memory at syscall entry
	MsgUnreadable  uint64 `json:"msg_unreadable"`  // sendmsg: the msghdr could not be read
	Channel        uint64 `json:"channel"`         // user space: Events was not drained fast enough
}

// Total is every lost event.
func (d Drops) Total() uint64 { return d.RingFull + d.AddrUnreadable + d.MsgUnreadable + d.Channel }

// DropCounts reads the kernel's per-CPU counts (summed) and user space's.
func (mo *Monitor) DropCounts() Drops {
	d := Drops{Channel: mo.dropped.Load()}
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.m.drops == nil {
		return d
	}
	for reason, dst := range map[uint32]*uint64{dropRingFull: &d.RingFull, dropAddrUnread: &d.AddrUnreadable, dropMsgUnread: &d.MsgUnreadable} {
		var perCPU []uint64
		if err := mo.m.drops.Lookup(reason, &perCPU); err == nil {
			for _, n := range perCPU {
				*dst += n
			}
		}
	}
	return d
}

// Dropped counts events lost: in the kernel (ring full, a destination not
// readable at syscall entry) and in user space (Events not drained fast
// enough). DropCounts says which.
func (mo *Monitor) Dropped() uint64 { return mo.DropCounts().Total() }

// Unreadable counts open/exec paths the kernel could not read at syscall
// entry (string not yet paged in): seen, but with no object to match.
func (mo *Monitor) Unreadable() uint64 { return mo.unread.Load() }

// ErrNotRegistered: MarkStopped or LastExit of a cgroup not registered.
var ErrNotRegistered = errors.New("monitor: cgroup not registered")

// Register adds a cgroup (by its v2 id) to those whose activity is shipped.
// Registering it again changes nothing (a stop mark stays).
func (mo *Monitor) Register(cgroupID uint64) error { return mo.register(cgroupID, "") }

func (mo *Monitor) register(cgroupID uint64, dir string) error {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.m.cgroups == nil {
		return ErrClosed
	}
	if st, ok := mo.cgroups[cgroupID]; ok {
		if dir != "" {
			st.dir = dir
		}
		return nil
	}
	if err := mo.m.cgroups.Put(cgroupID, uint64(0)); err != nil {
		return err
	}
	mo.cgroups[cgroupID] = &cgState{dir: dir}
	return nil
}

// Unregister stops shipping a cgroup's activity (and forgets its stop).
func (mo *Monitor) Unregister(cgroupID uint64) error {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.m.cgroups == nil {
		return ErrClosed
	}
	if st, ok := mo.cgroups[cgroupID]; ok {
		delete(mo.cgroups, cgroupID)
		if !st.stopped.IsZero() {
			if err := mo.setStopped(mo.stopped - 1); err != nil {
				return err
			}
		}
	}
	mo.forgetAlive(cgroupID)
	err := mo.m.cgroups.Delete(cgroupID)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil
	}
	return err
}

// MarkStopped tells the monitor that the session of a registered cgroup
// was stopped at at (zero: now). From then on, the first syscall of each
// of its processes is delivered as a KindAliveAfter event (named by the
// rules' alive-after-stop rule, Object the process's name), and its
// processes' exits are delivered as KindExit events. The cgroup stays
// registered until Unregister. Marking it again moves the stop and
// reports every process again.
func (mo *Monitor) MarkStopped(cgroupID uint64, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.m.cgroups == nil {
		return ErrClosed
	}
	st, ok := mo.cgroups[cgroupID]
	if !ok {
		return fmt.Errorf("%w: %d", ErrNotRegistered, cgroupID)
	}
	kt := at.Sub(time.Unix(0, 0).Add(mo.bootOff))
	if kt < 1 {
		kt = 1 // 0 means "running" in the map
	}
	mo.forgetAlive(cgroupID)
	if err := mo.m.cgroups.Put(cgroupID, uint64(kt)); err != nil {
		return err
	}
	if st.stopped.IsZero() {
		if err := mo.setStopped(mo.stopped + 1); err != nil {
			return err
		}
	}
	st.stopped = at
	return nil
}

// setStopped writes how many cgroups are stopped into the config map (the
// program looks at other syscalls only while it is not 0). Under mu.
func (mo *Monitor) setStopped(n uint32) error {
	binary.LittleEndian.PutUint32(mo.cfg[8:], n)
	if err := mo.m.config.Put(uint32(0), mo.cfg[:]); err != nil {
		return fmt.Errorf("monitor: config: %w", err)
	}
	mo.stopped = n
	return nil
}

// forgetAlive drops a cgroup's processes from the alive map, so a new stop
// reports them again. Under mu.
func (mo *Monitor) forgetAlive(cgroupID uint64) {
	var key [16]byte
	var val uint8
	var stale [][16]byte
	it := mo.m.alive.Iterate()
	for it.Next(&key, &val) {
		if binary.LittleEndian.Uint64(key[:8]) == cgroupID {
			stale = append(stale, key)
		}
	}
	for _, k := range stale {
		_ = mo.m.alive.Delete(k)
	}
}

// LastExit is what the kernel said of a registered cgroup's exits:
// how many of its tasks exited since Register, the kernel time of the
// latest, and whether no task is left in it now. When Empty and Exits > 0,
// Last is when the session's processes were gone, on the kernel's word.
//
// Emptiness is read from the cgroup's cgroup.events ("populated 0"), which
// the kernel clears after the last task's exit record was written; before
// answering, the records already in the ring are read (Sync), so Last is
// that final exit. A task that left the cgroup by migration, not exit, is
// not an exit: Last is then the latest exit before it.
func (mo *Monitor) LastExit(ctx context.Context, cgroupID uint64) (detect.Exits, error) {
	mo.mu.Lock()
	st, ok := mo.cgroups[cgroupID]
	var dir string
	if ok {
		dir = st.dir
	}
	mo.mu.Unlock()
	if !ok {
		return detect.Exits{}, fmt.Errorf("%w: %d", ErrNotRegistered, cgroupID)
	}
	empty, err := cgroupEmpty(cgroupID, dir)
	if err != nil {
		return detect.Exits{}, err
	}
	if empty {
		if err := mo.Sync(ctx); err != nil {
			return detect.Exits{}, err
		}
	}
	mo.mu.Lock()
	defer mo.mu.Unlock()
	st, ok = mo.cgroups[cgroupID]
	if !ok {
		return detect.Exits{}, fmt.Errorf("%w: %d", ErrNotRegistered, cgroupID)
	}
	e := st.exits
	e.Empty = empty
	return e, nil
}

// Sync returns once every record the kernel had written when it was called
// has been decoded (and, if delivered, sent on Events — a full channel
// counts it as dropped, so Sync never waits on the consumer).
func (mo *Monitor) Sync(ctx context.Context) error {
	mo.syncMu.Lock()
	defer mo.syncMu.Unlock()
	mo.mu.Lock()
	if mo.reader == nil || mo.closed {
		mo.mu.Unlock()
		return ErrClosed
	}
	done := make(chan struct{})
	mo.synced = done
	rd := mo.reader
	mo.mu.Unlock()
	if err := rd.Flush(); err != nil {
		return fmt.Errorf("monitor: flush: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-mo.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RegisterPath registers the cgroup v2 directory dir (e.g.
// /sys/fs/cgroup/unified/…/gatehouse-bwrap-<id>) and returns its id.
func (mo *Monitor) RegisterPath(dir string) (uint64, error) {
	id, err := CgroupID(dir)
	if err != nil {
		return 0, err
	}
	return id, mo.register(id, dir)
}

// CgroupID is the id of a cgroup v2 directory: its inode number, which is
// what bpf_get_current_cgroup_id returns for its tasks.
func CgroupID(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, fmt.Errorf("monitor: cgroup %s: %w", dir, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err == nil && fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return 0, fmt.Errorf("monitor: %s is not on a cgroup v2 file system", dir)
	}
	return st.Ino, nil
}

// Close detaches the program and frees every kernel object; safe twice.
func (mo *Monitor) Close() error { return mo.shutdown(true) }

func (mo *Monitor) shutdown(wait bool) error {
	mo.mu.Lock()
	if mo.closed {
		mo.mu.Unlock()
		if wait {
			mo.wg.Wait()
		}
		return nil
	}
	mo.closed = true
	var errs []error
	for _, l := range []link.Link{mo.link, mo.exitL} {
		if l != nil {
			errs = append(errs, l.Close()) // detach first: no new records
		}
	}
	if mo.reader != nil {
		errs = append(errs, mo.reader.Close()) // unblocks read()
	}
	for _, p := range []*ebpf.Program{mo.prog, mo.exitP} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	mo.m.close()
	mo.m = maps{}
	mo.prog, mo.link, mo.exitP, mo.exitL = nil, nil, nil, nil
	started := mo.started
	close(mo.done)
	if mo.stop != nil {
		mo.stop()
	}
	mo.mu.Unlock()
	if !started {
		close(mo.events)
	}
	if wait {
		mo.wg.Wait()
	}
	return errors.Join(errs...)
}

func unsupported(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL) || errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return fmt.Errorf("monitor: %w", err)
}

// kernelLayout reads the kernel's BTF (CO-RE without clang): the offset of
// task_struct.loginuid (0 when absent: the field stays 0), and whether the
// sched_process_exit tracepoint passes group_dead (kernels since 6.16 do;
// without it a thread-group leader's exit stands for its process's).
func kernelLayout() (loginuidOff uint32, groupDead bool) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0, false
	}
	var ts *btf.Struct
	if err := spec.TypeByName("task_struct", &ts); err == nil {
		for _, mb := range ts.Members {
			if mb.Name == "loginuid" {
				loginuidOff = mb.Offset.Bytes()
			}
		}
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_process_exit", &td); err == nil {
		if ptr, ok := td.Type.(*btf.Pointer); ok {
			if fp, ok := ptr.Target.(*btf.FuncProto); ok {
				// (void *ctx, struct task_struct *p, bool group_dead)
				groupDead = len(fp.Params) == 3
			}
		}
	}
	return loginuidOff, groupDead
}

// monotonicOffset is wall clock minus CLOCK_MONOTONIC (what ktime_get_ns
// counts), taken as the tightest of a few samples.
func monotonicOffset() time.Duration {
	best, bestSpan := time.Duration(0), time.Duration(1<<62)
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		t1 := time.Now()
		if span := t1.Sub(t0); span < bestSpan {
			mid := t0.Add(span / 2)
			best, bestSpan = time.Duration(mid.UnixNano()-ts.Nano()), span
		}
	}
	return best
}

// Loaded lists the BPF programs of any Gatehouse monitor loaded on this
// machine now (the gh_ prefix), as name#id: what a leftover check reports.
// Programs are owned by file descriptors, so a process that is gone leaves
// none; a non-empty list means a monitor is running somewhere.
func Loaded() []string {
	var names []string
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if info, err := p.Info(); err == nil && strings.HasPrefix(info.Name, "gh_") {
			names = append(names, fmt.Sprintf("%s#%d", info.Name, id))
		}
		p.Close()
	}
	sort.Strings(names)
	return names
}
