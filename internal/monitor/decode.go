package monitor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/miekg/dns"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// record is one ring buffer record, decoded.
type record struct {
	ktime, cgroup, pidTgid uint64
	nr, fd, n, loginuid    uint32
	data                   []byte
}

var errShort = errors.New("monitor: short record")

func (r record) tgid() int { return int(r.pidTgid >> 32) }
func (r record) pid() int  { return int(uint32(r.pidTgid)) }

// comm is the task name a life-cycle record carries.
func (r record) comm() string {
	c := r.data[:commLen]
	if i := bytes.IndexByte(c, 0); i >= 0 {
		c = c[:i]
	}
	return string(c)
}

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
	Kind   string // detect.KindConnect, KindDNS, KindOpen, KindExec, KindAliveAfter, KindExit
	Object string // "203.0.113.10:80", "[2001:db8::1]:53", a query name, a path
	Dest   string // for network kinds: the destination address:port
	Call   string // the syscall: connect, sendto, sendmsg, write, openat, ...
}

func (r record) call() string {
	switch r.nr {
	case recExit:
		return "exit"
	case recAlive:
		return "alive"
	}
	return syscallName(r.nr)
}

func syscallName(nr uint32) string {
	a, err := nativeABI()
	if err != nil {
		return ""
	}
	switch int32(nr) {
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
	case "exit":
		// Object: the thread group (the process); Call keeps the task.
		o.Kind, o.Object = detect.KindExit, strconv.Itoa(r.tgid())
		o.Call = "exit of " + r.comm() + " tid " + strconv.Itoa(r.pid())
		return o, true
	case "alive":
		// The first syscall of a process of a stopped cgroup: Object is
		// the process's name, Call the syscall (its number when not one
		// the monitor names).
		o.Kind, o.Object = detect.KindAliveAfter, r.comm()
		o.Call = syscallName(r.fd)
		if o.Call == "" {
			o.Call = "syscall " + strconv.FormatUint(uint64(r.fd), 10)
		}
		return o, o.Object != ""
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

// cgroupEmpty reads the "populated" line of a cgroup's cgroup.events (no
// task in it or its descendants). The cgroup is found by dir when known,
// else by its id (open_by_handle_at on the cgroup2 mount: the id is the
// kernfs file handle). A cgroup that no longer exists is empty.
func cgroupEmpty(id uint64, dir string) (bool, error) {
	var b []byte
	var err error
	if dir != "" {
		b, err = os.ReadFile(filepath.Join(dir, "cgroup.events"))
	} else {
		b, err = readByID(id, "cgroup.events")
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESTALE) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("monitor: cgroup %d: %w", id, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) == "0", nil
		}
	}
	return false, fmt.Errorf("monitor: cgroup %d: no populated line in cgroup.events", id)
}

func readByID(id uint64, name string) ([]byte, error) {
	mnt := cgroup2Mount()
	if mnt == "" {
		return nil, errors.New("no cgroup v2 hierarchy mounted")
	}
	mfd, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(mfd)
	var h [8]byte
	binary.LittleEndian.PutUint64(h[:], id)
	const fileidKernfs = 0xfe
	dfd, err := unix.OpenByHandleAt(mfd, unix.NewFileHandle(fileidKernfs, h[:]), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(f)
}

// cgroup2Mount is where the cgroup v2 hierarchy's root is mounted.
func cgroup2Mount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
			return f[4]
		}
	}
	return ""
}
