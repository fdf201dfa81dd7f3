package lab

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// A packet the kernel dropped at one of the lab's own sockets never became
// a hit: a full UDP receive buffer (the resolver, the callback, the
// catch-all read late by a starved harness), an accept queue that
// overflowed, a raw socket's queue. Quiet sees queues, not what fell off
// them; on a loaded machine such a drop can hide the very query or
// connection a gate looks for (issue 22). The lab reads these counters in
// its namespace when it is up and when it closes; any increase means no
// one can say nothing forbidden arrived.

// dropCounters are the namespace-wide counters read, by file and name.
var dropCounters = map[string][]string{
	"snmp":    {"Udp:RcvbufErrors", "Udp:MemErrors"},
	"snmp6":   {"Udp6RcvbufErrors", "Udp6MemErrors"},
	"netstat": {"TcpExt:ListenOverflows", "TcpExt:ListenDrops"},
}

// readDrops reads the drop counters of the namespace the calling thread
// is in, from /proc/thread-self/net, plus the drops column summed over
// its raw sockets (which have no namespace-wide counter).
func readDrops() (map[string]uint64, error) {
	out := map[string]uint64{}
	for file, names := range dropCounters {
		b, err := readBounded("/proc/thread-self/net/"+file, 1<<20)
		if err != nil {
			if os.IsNotExist(err) && file == "snmp6" {
				continue // IPv6 off in the namespace
			}
			return nil, err
		}
		var vals map[string]uint64
		if file == "snmp6" {
			vals, err = parseSnmp6(b)
		} else {
			vals, err = parseSnmp(b)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		for _, n := range names {
			if v, ok := vals[n]; ok {
				out[n] = v
			}
		}
	}
	for _, t := range []string{"raw", "raw6"} {
		b, err := readBounded("/proc/thread-self/net/"+t, 1<<20)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		n, err := sumDrops(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		out[t+":drops"] = n
	}
	return out, nil
}

func readBounded(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: over %d bytes", p, max)
	}
	return b, err
}

// parseSnmp reads the header/value line pairs of /proc/net/snmp and
// /proc/net/netstat into "Prefix:Name" -> value.
func parseSnmp(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 8192), 1<<20)
	var head []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		if head == nil || head[0] != f[0] {
			head = f
			continue
		}
		if len(f) != len(head) {
			return nil, fmt.Errorf("%s: %d values for %d names", f[0], len(f)-1, len(head)-1)
		}
		for i := 1; i < len(f); i++ {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s%s: %w", f[0], head[i], err)
			}
			if v >= 0 {
				out[f[0]+head[i]] = uint64(v)
			}
		}
		head = nil
	}
	return out, sc.Err()
}

// parseSnmp6 reads /proc/net/snmp6's "Name value" lines.
func parseSnmp6(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f[0], err)
		}
		out[f[0]] = v
	}
	return out, sc.Err()
}

// sumDrops sums the last column ("drops") of a /proc/net/raw table.
func sumDrops(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var sum uint64
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 13 {
			continue
		}
		v, err := strconv.ParseUint(f[len(f)-1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("drops %q: %w", f[len(f)-1], err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// dropsSince lists the counters that grew from base to now, as
// "Name +N", sorted.
func dropsSince(base, now map[string]uint64) []string {
	var out []string
	for k, v := range now {
		if b, ok := base[k]; (ok && v > b) || (!ok && v > 0 && !strings.HasSuffix(k, ":drops")) {
			out = append(out, fmt.Sprintf("%s +%d", k, v-base[k]))
		}
	}
	sort.Strings(out)
	return out
}

// readDropsIn reads the drop counters inside the lab's namespace.
func (l *Lab) readDropsIn() (map[string]uint64, error) {
	var m map[string]uint64
	err := InNetns(NetnsPath(l.name), func() error {
		var err error
		m, err = readDrops()
		return err
	})
	return m, err
}

// KernelDrops lists what the kernel dropped at the lab's own sockets since
// the lab came up ("Udp:RcvbufErrors +3"), up to its close once closed.
// An error means the counters could not be read: no one can then say
// nothing was dropped.
func (l *Lab) KernelDrops() ([]string, error) {
	l.dropsMu.Lock()
	base, end, err := l.dropsBase, l.dropsEnd, l.dropsErr
	l.dropsMu.Unlock()
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, errors.New("lab: kernel drops: never read")
	}
	if end == nil {
		if end, err = l.readDropsIn(); err != nil {
			return nil, fmt.Errorf("lab: kernel drops: %w", err)
		}
	}
	return dropsSince(base, end), nil
}

// noteDrops reads the counters at Up (base) and at Close (end).
func (l *Lab) noteDrops(end bool) {
	m, err := l.readDropsIn()
	l.dropsMu.Lock()
	defer l.dropsMu.Unlock()
	if err != nil {
		if l.dropsErr == nil {
			l.dropsErr = fmt.Errorf("lab: kernel drops: %w", err)
		}
		return
	}
	if end {
		// A new map: KernelDrops reads the old one outside the lock.
		merged := make(map[string]uint64, len(m))
		for k, v := range l.dropsEnd {
			merged[k] = v
		}
		for k, v := range m {
			merged[k] = max(merged[k], v)
		}
		l.dropsEnd = merged
	} else {
		l.dropsBase = m
	}
}
