package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// Objects are written the way the builtin monitor writes them, or matching
// fails silently:
//   - a destination is netip.AddrPort.String(): "203.0.113.10:80",
//     "[2001:db8:cafe::10]:80"; IPv4-mapped IPv6 addresses are unmapped and
//     zones dropped;
//   - a destination on port 53 is Kind dns with that same destination as
//     Object (a send toward a resolver); a query name, when an alert carries
//     one, is Kind dns with the name lower-case without its trailing dot;
//   - a path is kept as the alert gives it (no cleaning, no symlinks).

// destination returns the kind and normalised object of a network attempt
// toward ip:port, or ok false when ip or port is not one.
func destination(ip string, port int64) (kind, object string, ok bool) {
	a, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(ip), "[]"))
	if err != nil || port <= 0 || port > 65535 {
		return "", "", false
	}
	a = a.Unmap().WithZone("")
	object = netip.AddrPortFrom(a, uint16(port)).String()
	if port == 53 {
		return detect.KindDNS, object, true
	}
	return detect.KindConnect, object, true
}

// splitHostPort accepts "1.2.3.4:80", "[::1]:80" and, as Falco prints IPv6
// in fd.name, "2001:db8::10:80" (the port after the last colon).
func splitHostPort(s string) (string, int64, bool) {
	s = strings.TrimSpace(s)
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().String(), int64(ap.Port()), true
	}
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil {
		return "", 0, false
	}
	if _, err := netip.ParseAddr(strings.Trim(s[:i], "[]")); err != nil {
		return "", 0, false
	}
	return strings.Trim(s[:i], "[]"), p, true
}

// dnsName normalises a query name.
func dnsName(s string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
}

// loginUID maps the kernel's "unset" (4294967295, printed -1 by Falco) and
// out-of-range values to 0, which detect.SessionKey reads as unknown.
func loginUID(v int64, ok bool) uint32 {
	if !ok || v <= 0 || v >= 4294967295 {
		return 0
	}
	return uint32(v)
}

// containerID strips a runtime scheme ("containerd://abc" → "abc"); Falco's
// "host" (not in a container) is no container id.
func containerID(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if s == "host" {
		return ""
	}
	return s
}

// flexInt is a JSON integer that producers write as a number or as a
// numeric string (protobuf JSON writes 64-bit integers as strings).
type flexInt struct {
	V  int64
	OK bool
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			return nil
		}
		b = []byte(s)
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		// A float with no fraction (some encoders) is still an integer.
		fv, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || fv != float64(int64(fv)) {
			return fmt.Errorf("not an integer: %.40q", b)
		}
		v = int64(fv)
	}
	f.V, f.OK = v, true
	return nil
}

// decodeObject decodes one JSON object into v, refusing trailing data.
func decodeObject(raw []byte, v any) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the object")
	}
	return nil
}

// anyInt reads an integer from a decoded JSON value (json.Number or string).
func anyInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		if f, err := x.Float64(); err == nil && f == float64(int64(f)) {
			return int64(f), true
		}
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return i, true
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	}
	return 0, false
}

func anyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}
