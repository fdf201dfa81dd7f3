// Package monitor is Gatehouse's own eBPF monitor: one raw tracepoint
// program on sys_enter, assembled in Go (no clang, no committed object),
// that ships connect, sendto/sendmsg (with destination and the first bytes
// of the payload), writes on sockets connected to port 53, openat/openat2
// and execve of the registered sessions' cgroups through a ring buffer. It
// is a detect.Source: each record becomes a detect.Event named by the rule
// it fired (rules are data, see rules.go).
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
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"gatehouse/detect"
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
	reader  *ringbuf.Reader
	events  chan detect.Event
	done    chan struct{}
	stop    context.CancelFunc
	wg      sync.WaitGroup
	dropped atomic.Uint64 // events lost in user space (channel full)
	unread  atomic.Uint64 // paths the kernel could not read (not paged in)
	bootOff time.Duration // wall clock − CLOCK_MONOTONIC, for EventTime
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
	return &Monitor{opts: opts, rules: r, events: make(chan detect.Event, opts.Buffer), done: make(chan struct{})}, nil
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
	var cfg [8]byte
	binary.LittleEndian.PutUint32(cfg[0:], filter)
	binary.LittleEndian.PutUint32(cfg[4:], self)
	if err := m.config.Put(uint32(0), cfg[:]); err != nil {
		m.close()
		return fmt.Errorf("monitor: config: %w", err)
	}
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name:         programName,
		Type:         ebpf.RawTracepoint,
		License:      "GPL", // the probe_read and ringbuf helpers are GPL-only
		Instructions: instructions(a, m, loginuidOffset()),
	}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
	if err != nil {
		m.close()
		return unsupported(fmt.Errorf("load: %w", err))
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: prog})
	if err != nil {
		prog.Close()
		m.close()
		return unsupported(fmt.Errorf("attach sys_enter: %w", err))
	}
	rd, err := ringbuf.NewReader(m.events)
	if err != nil {
		l.Close()
		prog.Close()
		m.close()
		return fmt.Errorf("monitor: ring reader: %w", err)
	}
	mo.m, mo.prog, mo.link, mo.reader = m, prog, l, rd
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
	Program ebpf.ProgramID
	Maps    []ebpf.MapID
}

// IDs returns the ids of the loaded program and maps.
func (mo *Monitor) IDs() (KernelIDs, error) {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.prog == nil {
		return KernelIDs{}, ErrClosed
	}
	var ids KernelIDs
	info, err := mo.prog.Info()
	if err != nil {
		return ids, err
	}
	var ok bool
	if ids.Program, ok = info.ID(); !ok {
		return ids, fmt.Errorf("%w: program id not reported", ErrUnsupported)
	}
	for _, mp := range []*ebpf.Map{mo.m.events, mo.m.config, mo.m.cgroups, mo.m.dnsfd, mo.m.drops} {
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
	rule := mo.rules.Evaluate(o, mo.opts.Params)
	if rule == "" && !mo.opts.All {
		return detect.Event{}, false, false
	}
	return detect.Event{
		Source: "builtin",
		Rule:   rule,
		Kind:   o.Kind,
		Object: o.Object,
		Key: detect.SessionKey{
			CgroupID: r.cgroup,
			LoginUID: r.loginuid,
			PID:      int(r.pidTgid >> 32),
		},
		EventTime: time.Unix(0, 0).Add(mo.bootOff + time.Duration(r.ktime)),
		Received:  received,
		Raw:       raw,
	}, true, false
}

// Events delivers decoded events; closed after Close.
func (mo *Monitor) Events() <-chan detect.Event { return mo.events }

// Dropped counts events lost: in the kernel (ring full) and in user space
// (Events not drained fast enough).
func (mo *Monitor) Dropped() uint64 {
	n := mo.dropped.Load()
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.m.drops != nil {
		var k uint64
		if err := mo.m.drops.Lookup(uint32(0), &k); err == nil {
			n += k
		}
	}
	return n
}

// Unreadable counts open/exec paths the kernel could not read at syscall
// entry (string not yet paged in): seen, but with no object to match.
func (mo *Monitor) Unreadable() uint64 { return mo.unread.Load() }

// Register adds a cgroup (by its v2 id) to those whose activity is shipped.
func (mo *Monitor) Register(cgroupID uint64) error {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.m.cgroups == nil {
		return ErrClosed
	}
	return mo.m.cgroups.Put(cgroupID, uint8(1))
}

// Unregister stops shipping a cgroup's activity.
func (mo *Monitor) Unregister(cgroupID uint64) error {
	mo.mu.Lock()
	defer mo.mu.Unlock()
	if mo.m.cgroups == nil {
		return ErrClosed
	}
	err := mo.m.cgroups.Delete(cgroupID)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil
	}
	return err
}

// RegisterPath registers the cgroup v2 directory dir (e.g.
// /sys/fs/cgroup/unified/…/gatehouse-bwrap-<id>) and returns its id.
func (mo *Monitor) RegisterPath(dir string) (uint64, error) {
	id, err := CgroupID(dir)
	if err != nil {
		return 0, err
	}
	return id, mo.Register(id)
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
	if mo.link != nil {
		errs = append(errs, mo.link.Close()) // detach first: no new records
	}
	if mo.reader != nil {
		errs = append(errs, mo.reader.Close()) // unblocks read()
	}
	if mo.prog != nil {
		errs = append(errs, mo.prog.Close())
	}
	mo.m.close()
	mo.m = maps{}
	mo.prog, mo.link = nil, nil
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

// loginuidOffset finds task_struct.loginuid in the kernel's BTF (CO-RE
// without clang); 0 when absent (no audit, no BTF): the field stays 0.
func loginuidOffset() uint32 {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0
	}
	var ts *btf.Struct
	if err := spec.TypeByName("task_struct", &ts); err != nil {
		return 0
	}
	for _, mb := range ts.Members {
		if mb.Name == "loginuid" {
			return mb.Offset.Bytes()
		}
	}
	return 0
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
