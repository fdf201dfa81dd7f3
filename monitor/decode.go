package monitor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"gatehouse/detect"
)

// record is one ring buffer record, decoded.
type record struct {
	ktime, cgroup, pidTgid uint64
	nr, fd, n, loginuid    uint32
	data                   []byte
}

var errShort = errors.New("monitor: short record")

func parseRecord(b []byte) (record, error) {
	if len(b) < recSize {
		return record{}, errShort
	}
	le := binary.LittleEndian
	return record{
		ktime:    le.Uint64(b[offKtime:]),
		cgroup:   le.Uint64(b[offCgroup:]),
		pidTgid:  le.Uint64(b[offPidTgid:]),
		nr:       le.Uint32(b[offNr:]),
		fd:       le.Uint32(b[offFd:]),
		n:        le.Uint32(b[offLen:]),
		loginuid: le.Uint32(b[offLoginUID:]),
		data:     b[offData:recSize],
	}, nil
}

// Observation is what a record means, as rules see it.
type Observation struct {
	Kind   string // detect.KindConnect, KindDNS, KindOpen, KindExec
	Object string // "203.0.113.10:80", "[2001:db8::1]:53", a query name, a path
	Dest   string // for network kinds: the destination address:port
	Call   string // the syscall: connect, sendto, sendmsg, write, openat, ...
}

func (r record) call() string {
	a, err := nativeABI()
	if err != nil {
		return ""
	}
	switch int32(r.nr) {
	case a.connect:
		return "connect"
	case a.sendto:
		return "sendto"
	case a.sendmsg:
		return "sendmsg"
	case a.write:
		return "write"
	case a.open:
		return "open"
	case a.openat:
		return "openat"
	case a.openat2:
		return "openat2"
	case a.execve:
		return "execve"
	case a.execveat:
		return "execveat"
	}
	return ""
}

func (r record) unreadable() bool {
	switch r.call() {
	case "open", "openat", "openat2", "execve", "execveat":
		return r.n == 0
	}
	return false
}

// observation turns a record into kind and object. A destination on port 53
// is DNS: its object is the query name when the payload holds a query, the
// destination otherwise (a connect, before anything was sent).
func (r record) observation() (Observation, bool) {
	o := Observation{Call: r.call()}
	switch o.Call {
	case "connect", "sendto", "sendmsg", "write":
		ap, ok := sockaddr(r.data[:sockaddrLen])
		if !ok {
			return o, false
		}
		o.Dest = ap.String()
		o.Kind, o.Object = detect.KindConnect, o.Dest
		if ap.Port() == 53 {
			o.Kind = detect.KindDNS
			if o.Call != "connect" {
				n := min(int(r.n), payloadMax)
				if name, ok := queryName(r.data[sockaddrLen : sockaddrLen+n]); ok {
					o.Object = name
				}
			}
		}
		return o, true
	case "open", "openat", "openat2", "execve", "execveat":
		if r.n == 0 {
			return o, false
		}
		p := r.data[:min(int(r.n), pathMax)]
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		o.Kind, o.Object = detect.KindOpen, string(p)
		if strings.HasPrefix(o.Call, "exec") {
			o.Kind = detect.KindExec
		}
		return o, o.Object != ""
	}
	return o, false
}

// sockaddr reads a struct sockaddr_in or sockaddr_in6 (port and address in
// network order). Object normalisation: "203.0.113.10:80", "[2001:db8::1]:80";
// a v4-mapped v6 address is shown as IPv4, as the connection really is.
func sockaddr(b []byte) (netip.AddrPort, bool) {
	fam := binary.LittleEndian.Uint16(b[0:])
	port := binary.BigEndian.Uint16(b[2:])
	switch fam {
	case 2: // AF_INET
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), true
	case 10: // AF_INET6
		a := netip.AddrFrom16([16]byte(b[8:24])).Unmap()
		return netip.AddrPortFrom(a, port), true
	}
	return netip.AddrPort{}, false
}

// queryName is the first question of a DNS message (lower case, no final
// dot); a truncated capture still yields it when the question fits.
func queryName(b []byte) (string, bool) {
	if len(b) < 12 {
		return "", false
	}
	var m dns.Msg
	if err := m.Unpack(b); err == nil && len(m.Question) > 0 {
		return normName(m.Question[0].Name), true
	}
	// Unpack refuses a message cut short; the question starts at 12.
	name, _, err := dns.UnpackDomainName(b, 12)
	if err != nil || name == "" {
		return "", false
	}
	return normName(name), true
}

func normName(s string) string { return strings.ToLower(strings.TrimSuffix(s, ".")) }

// Describe is a one-line reading of a raw record (for traces and tests).
func Describe(raw []byte) string {
	r, err := parseRecord(raw)
	if err != nil {
		return err.Error()
	}
	o, _ := r.observation()
	return o.Call + " pid=" + strconv.FormatUint(r.pidTgid>>32, 10) + " cgroup=" + strconv.FormatUint(r.cgroup, 10) + " " + o.Kind + " " + o.Object
}
