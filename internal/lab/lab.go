package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/lab/model"
	"github.com/gatehouse-dev/gatehouse/internal/namedns"
	"github.com/vishvananda/netlink"
)

// Options configure Up.
type Options struct {
	ID      string    // 4-6 lowercase hex chars; random when empty
	HitLog  io.Writer // optional: every hit is also appended here as a JSON line
	Logf    func(format string, a ...any)
	MaxHits int // hits kept in memory; DefaultMaxHits when zero
	// Public overrides the public-looking callback and second authority
	// addresses; zero fields take DefaultPublic. Up refuses unsafe or
	// non-public-looking values (see checkPublic).
	Public Public

	// Transcript optionally receives every scripted-model request as a
	// JSON line (model.Record, canaries included: it is a trace file).
	Transcript io.Writer
}

var idRE = regexp.MustCompile(`^[0-9a-f]{4,6}$`)

// Lab is a running lab namespace with its endpoints and attached sessions.
type Lab struct {
	conns    connSet // accepted TCP connections, by peer (Cut ends a session's)
	busy     busySet // connections accepted and not recorded yet (quiet.go)
	id, name string
	addrs    Addrs
	logf     func(format string, a ...any)
	hits     *hitLog
	canaries Canaries
	stops    []func(ctx context.Context) error // endpoint shutdowns, in start order
	broker   *Broker                           // served under /broker/ on the inference host
	intake   *intake.Service                   // the results-intake service (intakehost.go)
	minter   *intake.Minter                    // mints the intake service's run tokens

	// The scripted model: its scripts by API key (under mu) and the
	// records of what each session's agent asked it.
	models     map[string]model.Script
	transcript *transcriptLog

	mu       sync.Mutex
	sessions map[string]*attachment // by session name
	bySrc    map[netip.Addr]string  // session address -> session name
	byTag    map[string]string      // in-band session tag -> session name
	alive    map[string]bool        // sessions between Track and Untrack
	next     int                    // where the round-robin search for a free link starts
	rebinds  map[string]int         // A queries per rebinding name and asker (names.go)
	// plumbing is held (write) while links are made or removed and (read)
	// while Sealed reads the namespace: a half-made or half-removed veth
	// must not read as a foreign interface or route.
	plumbing sync.RWMutex

	// rtnl is a route netlink socket inside the lab namespace, open from Up
	// to Close: links and addresses are made and inspected through it.
	rtnl *netlink.Handle

	// The kernel's drop counters in the namespace, at Up and at Close
	// (drops.go).
	dropsMu             sync.Mutex
	dropsBase, dropsEnd map[string]uint64
	dropsErr            error

	created   bool   // the lab namespace is ours to delete (never another run's)
	release   func() // drops its ledger entry
	closeOnce sync.Once
	closeErr  error
}

// Up creates the lab namespace, puts the lab addresses on its lo, starts
// every endpoint inside it, and then proves the namespace sealed. On any
// failure it removes what it made.
func Up(ctx context.Context, opts Options) (*Lab, error) {
	id := opts.ID
	if id == "" {
		var err error
		if id, err = freeID(); err != nil {
			return nil, fmt.Errorf("lab: up: %w", err)
		}
	}
	if !idRE.MatchString(id) {
		return nil, fmt.Errorf("lab: up: id %q is not 4-6 lowercase hex chars", id)
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	pub, err := opts.Public.resolve()
	if err != nil {
		return nil, fmt.Errorf("lab: up: %w", err)
	}
	canaries, err := newCanaries()
	if err != nil {
		return nil, fmt.Errorf("lab: up: %w", err)
	}
	l := &Lab{
		id: id, name: "gh-" + id, logf: logf, addrs: addrsWith(pub),
		hits:     newHitLog(opts.MaxHits, opts.HitLog),
		canaries: canaries,
		sessions: map[string]*attachment{},
		bySrc:    map[netip.Addr]string{},
		byTag:    map[string]string{},
		alive:    map[string]bool{},
	}
	l.transcript = newTranscriptLog(opts.Transcript)
	if err := l.up(ctx); err != nil {
		if cerr := l.Close(context.WithoutCancel(ctx)); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, fmt.Errorf("lab: up: %w", err)
	}
	logf("lab %s up", l.name)
	return l, nil
}

func (l *Lab) up(ctx context.Context) error {
	// Adding fails when the name exists, so a namespace we did not make is
	// never adopted, and never deleted by our Close. Its lo is up.
	release, err := namedns.AddRecorded(l.name)
	if err != nil {
		return err
	}
	l.created, l.release = true, release
	h, err := rtnlAt(NetnsPath(l.name))
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", l.name, err)
	}
	l.rtnl = h
	// Without nodad (addAddrs sets it) an IPv6 address stays "tentative" for
	// a moment, even on lo, and binding to it fails with EADDRNOTAVAIL.
	if err := addAddrs(l.rtnl, l.name, "lo", l.addrs.loAddrs()...); err != nil {
		return err
	}
	// The lab routes between sessions (the cross-session gate needs that to
	// be possible, so the sandbox's own policy is what is tested).
	for _, kv := range [][2]string{{"net.ipv4.ip_forward", "1"}, {"net.ipv6.conf.all.forwarding", "1"}} {
		if err := setSysctl(NetnsPath(l.name), kv[0], kv[1]); err != nil {
			return err
		}
	}
	// Before any endpoint listens: every drop at one of them counts.
	l.noteDrops(false)
	if err := l.startEndpoints(ctx); err != nil {
		return err
	}
	if err := l.addCatchAll(ctx); err != nil {
		return err
	}
	if err := l.addArrivals(ctx); err != nil {
		return err
	}
	return l.Sealed(ctx)
}

// freeID picks a random id whose namespace does not exist yet.
func freeID() (string, error) {
	b := make([]byte, 2)
	for range 8 {
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("random id: %w", err)
		}
		id := hex.EncodeToString(b)
		if _, err := os.Stat(NetnsPath("gh-" + id)); errors.Is(err, os.ErrNotExist) {
			return id, nil
		}
	}
	return "", errors.New("no free lab id after 8 tries")
}

// Name is the lab's network namespace name.
func (l *Lab) Name() string { return l.name }

// Addrs returns the lab's addresses.
func (l *Lab) Addrs() Addrs { return l.addrs }

// Canaries returns the fake credentials this lab's metadata services hand out.
func (l *Lab) Canaries() Canaries { return l.canaries }

// Hits returns a copy of every hit kept, in arrival order.
func (l *Lab) Hits() []evidence.Hit { return l.hits.all(nil) }

// HitsFor returns the hits attributed to one session.
func (l *Lab) HitsFor(session string) []evidence.Hit {
	return l.hits.all(func(h evidence.Hit) bool { return h.Session == session })
}

// Dropped is how many hits arrived after the in-memory cap was reached.
func (l *Lab) Dropped() int {
	n, _ := l.hits.stats()
	return n
}

// record stores a hit, stamping the time and attributing it to a session
// (see attribute), and returns it as stored.
func (l *Lab) record(h evidence.Hit, from string) evidence.Hit {
	// With Go's monotonic reading (UTC() would strip it): the stop's
	// timings compare hits with moments measured on that clock, which a
	// step of the wall clock leaves alone. This VM, resumed from a
	// snapshot, stepped its wall clock 6.4 s while the monotonic one
	// stood still, and heartbeats sent before a stop were judged sent
	// after the session was seen gone. JSON is written in UTC (Hit).
	h.Time = time.Now()
	if h.Session == "" {
		h.Session, h.Attribution = l.attribute(h, from)
	} else if h.Attribution == "" {
		h.Attribution = "endpoint"
	}
	l.hits.add(h)
	return h
}

// sessionOf maps a source address ("ip" or "ip:port") to the session that
// holds it, or last held it (detach keeps the mapping until reuse).
func (l *Lab) sessionOf(src string) string {
	a, err := netip.ParseAddr(src)
	if err != nil {
		ap, perr := netip.ParseAddrPort(src)
		if perr != nil {
			return ""
		}
		a = ap.Addr()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bySrc[a.Unmap().WithZone("")]
}

// Close stops every endpoint (waiting for requests in flight), removes every
// session namespace and the lab namespace. It is safe to call twice.
func (l *Lab) Close(ctx context.Context) error {
	l.closeOnce.Do(func() { l.closeErr = l.close(ctx) })
	return l.closeErr
}

func (l *Lab) close(ctx context.Context) error {
	var errs []error
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if l.created && l.rtnl != nil {
		// Before the endpoints stop: raw sockets' drops are per socket and
		// go with them.
		l.noteDrops(true)
	}
	for i := len(l.stops) - 1; i >= 0; i-- {
		if err := l.stops[i](sctx); err != nil {
			errs = append(errs, err)
		}
	}
	if l.created && l.rtnl != nil {
		// Every endpoint stopped, the namespace still there: the
		// namespace-wide counters, to the end (the larger of the two
		// readings is kept, key by key).
		l.noteDrops(true)
	}
	l.mu.Lock()
	names := make([]string, 0, len(l.sessions))
	for n := range l.sessions {
		names = append(names, n)
	}
	l.mu.Unlock()
	for _, n := range names {
		if err := l.detach(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", n, err))
		}
	}
	if l.rtnl != nil {
		// The socket holds the namespace: close it before deleting.
		l.plumbing.Lock()
		l.rtnl.Close()
		l.rtnl = nil
		l.plumbing.Unlock()
	}
	if l.created {
		if err := deleteNetns(l.name); err != nil {
			errs = append(errs, err)
		} else if l.release != nil {
			l.release()
		}
	}
	if _, werr := l.hits.stats(); werr != nil {
		errs = append(errs, fmt.Errorf("hit log: %w", werr))
	}
	if werr := l.transcript.err(); werr != nil {
		errs = append(errs, fmt.Errorf("model transcript: %w", werr))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab: close %s: %w", l.name, err)
	}
	l.logf("lab %s closed", l.name)
	return nil
}
