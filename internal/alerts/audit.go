package alerts

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// An audit record: `type=SYSCALL msg=audit(1700000000.123:42): k=v ...`,
// optionally followed (log_format=ENRICHED) by \x1d and interpreted fields
// such as SYSCALL=connect.
type auditRecord struct {
	Type   string
	Stamp  string // "1700000000.123:42"
	Fields map[string]string
	Interp map[string]string
}

// auditHeader splits a record's header; rest is what follows "): ".
func auditHeader(line []byte) (typ, stamp string, rest []byte, err error) {
	if !bytes.HasPrefix(line, []byte("type=")) {
		return "", "", nil, fmt.Errorf("no type=")
	}
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return "", "", nil, fmt.Errorf("no msg=")
	}
	typ = string(line[len("type="):sp])
	r := line[sp+1:]
	if !bytes.HasPrefix(r, []byte("msg=audit(")) {
		return "", "", nil, fmt.Errorf("no msg=audit(")
	}
	r = r[len("msg=audit("):]
	end := bytes.IndexByte(r, ')')
	if end < 0 {
		return "", "", nil, fmt.Errorf("unterminated audit(")
	}
	stamp = string(r[:end])
	if _, _, err := auditStamp(stamp); err != nil {
		return "", "", nil, err
	}
	r = r[end+1:]
	r = bytes.TrimPrefix(r, []byte(":"))
	return typ, stamp, r, nil
}

// auditStamp parses "sec.ms:serial".
func auditStamp(s string) (time.Time, uint64, error) {
	ts, serial, ok := strings.Cut(s, ":")
	if !ok {
		return time.Time{}, 0, fmt.Errorf("stamp %.40q: no serial", s)
	}
	sec, frac, _ := strings.Cut(ts, ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || secs < 0 {
		return time.Time{}, 0, fmt.Errorf("stamp %.40q: seconds", s)
	}
	var nanos int64
	if frac != "" {
		if len(frac) > 9 {
			return time.Time{}, 0, fmt.Errorf("stamp %.40q: fraction", s)
		}
		f, err := strconv.ParseInt(frac, 10, 64)
		if err != nil || f < 0 {
			return time.Time{}, 0, fmt.Errorf("stamp %.40q: fraction", s)
		}
		nanos = f * int64(pow10(9-len(frac)))
	}
	n, err := strconv.ParseUint(serial, 10, 64)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("stamp %.40q: serial", s)
	}
	return time.Unix(secs, nanos).UTC(), n, nil
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}

// auditFields tokenises k=v pairs: v is "quoted", 'quoted' or a bare
// token. Quoted values are stored as they are; bare ones are marked with a
// leading NUL so auditName can tell an encoded name from a quoted one.
func auditFields(b []byte) map[string]string {
	m := map[string]string{}
	s := string(b)
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return m
		}
		eq := strings.IndexByte(s, '=')
		sp := strings.IndexByte(s, ' ')
		if eq < 0 || (sp >= 0 && sp < eq) {
			if sp < 0 { // a bare word: skip it
				return m
			}
			s = s[sp:]
			continue
		}
		k := s[:eq]
		s = s[eq+1:]
		if s != "" && (s[0] == '"' || s[0] == '\'') {
			q := s[0]
			end := strings.IndexByte(s[1:], q)
			if end < 0 {
				m[k], s = s[1:], ""
			} else {
				m[k], s = s[1:1+end], s[2+end:]
			}
			continue
		}
		if sp = strings.IndexByte(s, ' '); sp < 0 {
			m[k], s = "\x00"+s, ""
		} else {
			m[k], s = "\x00"+s[:sp], s[sp:]
		}
	}
}

// field returns a value without the bare marker.
func field(m map[string]string, k string) string {
	return strings.TrimPrefix(m[k], "\x00")
}

// auditName decodes a name: quoted is literal; bare is hex-encoded (names
// with spaces or special characters) unless it is "(null)" or "(none)".
func auditName(m map[string]string, k string) string {
	v, ok := m[k]
	if !ok {
		return ""
	}
	bare, isBare := strings.CutPrefix(v, "\x00")
	if !isBare {
		return v
	}
	if bare == "(null)" || bare == "(none)" {
		return ""
	}
	if b, err := hex.DecodeString(bare); err == nil {
		return string(b)
	}
	return bare
}

func parseAuditRecord(line []byte) (auditRecord, error) {
	typ, stamp, rest, err := auditHeader(line)
	if err != nil {
		return auditRecord{}, err
	}
	main, interp, _ := bytes.Cut(rest, []byte{0x1d})
	return auditRecord{Type: typ, Stamp: stamp, Fields: auditFields(main), Interp: auditFields(interp)}, nil
}

// Syscall numbers by audit arch (x86_64, aarch64), for raw logs.
var auditSyscalls = map[string]map[string]string{
	"c000003e": {"42": "connect", "44": "sendto", "46": "sendmsg", "307": "sendmmsg", "2": "open", "257": "openat", "437": "openat2", "85": "creat", "59": "execve", "322": "execveat"},
	"c00000b7": {"203": "connect", "206": "sendto", "211": "sendmsg", "269": "sendmmsg", "56": "openat", "437": "openat2", "221": "execve", "281": "execveat"},
}

// ParseAudit reads auditd log lines (raw or ENRICHED format), groups them
// by audit(sec.ms:serial) and gives one Event per group. Rule is the
// SYSCALL record's key= (else its type). Kind from the syscall: connect,
// sendto, sendmsg with a SOCKADDR record (saddr hex: inet, inet6, or a
// unix socket's path) → connect/dns; open, openat, openat2, creat with a
// PATH record (the first that is not a PARENT; joined to CWD when
// relative) → open; execve → exec of PATH item 0 (else exe=). Keys: auid
// (unset 4294967295 → unknown), pid. EventTime is the record's stamp.
// Groups with no SYSCALL record (logins, config changes) keep Kind "".
func ParseAudit(raw []byte, received time.Time) ([]detect.Event, error) {
	var asm Assembler
	var out []detect.Event
	emit := func(g []byte) error {
		if g == nil {
			return nil
		}
		e, err := auditEvent(g, received)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	}
	for line := range bytes.Lines(raw) {
		g, err := asm.Add(line)
		if err != nil {
			return nil, err
		}
		if err := emit(g); err != nil {
			return nil, err
		}
	}
	if err := emit(asm.Flush()); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, malformed(FormatAudit, "no audit record", nil)
	}
	return out, nil
}

// AuditGroup turns the records of one audit event (one serial, as log
// lines) into an Event, with the same normalisation as ParseAudit: a live
// audit source (package auditmon) builds the lines from netlink records
// and calls it, so a record read live and the same record read from a log
// give the same kind and object.
func AuditGroup(group []byte, received time.Time) (detect.Event, error) {
	return auditEvent(group, received)
}

// auditEvent turns one group (the records of one serial) into an Event.
func auditEvent(group []byte, received time.Time) (detect.Event, error) {
	e := detect.Event{Source: FormatAudit, Received: received, Raw: group}
	var sys *auditRecord
	var sock, cwd string
	type pathRec struct{ item, name, nametype string }
	var paths []pathRec
	for line := range bytes.Lines(group) {
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := parseAuditRecord(line)
		if err != nil {
			return e, malformed(FormatAudit, "record", err)
		}
		if e.EventTime.IsZero() {
			e.EventTime, _, _ = auditStamp(r.Stamp)
		}
		switch r.Type {
		case "SYSCALL":
			if sys == nil {
				sys = &r
			}
		case "SOCKADDR":
			sock = field(r.Fields, "saddr")
		case "CWD":
			cwd = auditName(r.Fields, "cwd")
		case "PATH":
			paths = append(paths, pathRec{field(r.Fields, "item"), auditName(r.Fields, "name"), field(r.Fields, "nametype")})
		}
		if e.Rule == "" {
			e.Rule = r.Type
		}
	}
	if sys == nil {
		return e, nil
	}
	f := sys.Fields
	e.Rule = "SYSCALL"
	if k := auditName(f, "key"); k != "" {
		e.Rule = strings.ReplaceAll(k, "\x01", ",") // several keys arrive hex-encoded, \x01-separated
	}
	if v, err := strconv.ParseInt(field(f, "auid"), 10, 64); err == nil {
		e.Key.LoginUID = loginUID(v, true)
	}
	if v, err := strconv.ParseInt(field(f, "pid"), 10, 64); err == nil && v > 0 && v <= 1<<31-1 {
		e.Key.PID = int(v)
	}
	name := field(sys.Interp, "SYSCALL")
	if name == "" {
		name = auditSyscalls[field(f, "arch")][field(f, "syscall")]
	}
	switch name {
	case "connect", "sendto", "sendmsg", "sendmmsg":
		e.Kind, e.Object = sockaddrObject(sock)
	case "open", "openat", "openat2", "creat":
		for _, p := range paths {
			if p.nametype == "PARENT" || p.name == "" {
				continue
			}
			n := p.name
			if !strings.HasPrefix(n, "/") && cwd != "" {
				n = path.Join(cwd, n)
			}
			e.Kind, e.Object = detect.KindOpen, n
			break
		}
	case "execve", "execveat":
		obj := ""
		for _, p := range paths {
			if p.item == "0" && strings.HasPrefix(p.name, "/") {
				obj = p.name
			}
		}
		if obj == "" {
			obj = auditName(f, "exe")
		}
		if obj != "" {
			e.Kind, e.Object = detect.KindExec, obj
		}
	}
	return e, nil
}

// sockaddrObject decodes a SOCKADDR saddr (a struct sockaddr in hex, the
// family in host byte order — little-endian on the architectures we read).
func sockaddrObject(saddr string) (kind, object string) {
	b, err := hex.DecodeString(saddr)
	if err != nil || len(b) < 2 {
		return "", ""
	}
	switch binary.LittleEndian.Uint16(b) {
	case 1: // AF_UNIX: a path, NUL-terminated (abstract sockets start with NUL)
		p := b[2:]
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		if len(p) > 0 && p[0] == '/' {
			return detect.KindConnect, string(p)
		}
	case 2: // AF_INET: port (big-endian), address
		if len(b) >= 8 {
			a := netip.AddrFrom4([4]byte(b[4:8]))
			if k, o, ok := destination(a.String(), int64(binary.BigEndian.Uint16(b[2:4]))); ok {
				return k, o
			}
		}
	case 10: // AF_INET6: port, flowinfo, address
		if len(b) >= 24 {
			a := netip.AddrFrom16([16]byte(b[8:24]))
			if k, o, ok := destination(a.String(), int64(binary.BigEndian.Uint16(b[2:4]))); ok {
				return k, o
			}
		}
	}
	return "", ""
}
