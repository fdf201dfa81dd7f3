package alerts

import (
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// falcoAlert is Falco's JSON output (json_output: true), the same in
// file_output lines, http_output bodies and falcosidekick's forwards.
type falcoAlert struct {
	Time         string         `json:"time"`
	Rule         string         `json:"rule"`
	Priority     string         `json:"priority"`
	Source       string         `json:"source"`
	Hostname     string         `json:"hostname"`
	Output       string         `json:"output"`
	Tags         []string       `json:"tags"`
	OutputFields map[string]any `json:"output_fields"`
}

// ParseFalco reads one Falco alert (a JSON object). Kind and Object come
// from output_fields only (the output text is for people): evt.type says
// what the syscall was; fd.sip/fd.sport (else fd.rip/fd.rport, else the
// right side of fd.name "a:p->b:q") give a destination; fd.name gives a
// path or a unix socket's path; proc.exepath the executed program. Keys:
// user.loginuid (or proc.loginuid), container.id ("host" is none),
// proc.pid. EventTime is the alert's time (the kernel event's time).
func ParseFalco(raw []byte, received time.Time) ([]detect.Event, error) {
	var a falcoAlert
	if err := decodeObject(raw, &a); err != nil {
		return nil, malformed(FormatFalco, "decode", err)
	}
	e := detect.Event{Source: FormatFalco, Rule: a.Rule, Received: received, Raw: raw}
	if a.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, a.Time)
		if err != nil {
			return nil, malformed(FormatFalco, "time", err)
		}
		e.EventTime = t
	}
	f := a.OutputFields
	if f == nil {
		return []detect.Event{e}, nil // valid, says nothing usable
	}
	uid, ok := anyInt(f["user.loginuid"])
	if !ok {
		uid, ok = anyInt(f["proc.loginuid"])
	}
	e.Key.LoginUID = loginUID(uid, ok)
	e.Key.ContainerID = containerID(anyString(f["container.id"]))
	if pid, ok := anyInt(f["proc.pid"]); ok && pid > 0 && pid <= 1<<31-1 {
		e.Key.PID = int(pid)
	}
	e.Kind, e.Object = falcoKind(f)
	return []detect.Event{e}, nil
}

func falcoKind(f map[string]any) (kind, object string) {
	evt := anyString(f["evt.type"])
	fdType := anyString(f["fd.type"])
	name := anyString(f["fd.name"])
	switch evt {
	case "execve", "execveat":
		if p := anyString(f["proc.exepath"]); p != "" {
			return detect.KindExec, p
		}
		return "", ""
	case "open", "openat", "openat2", "creat":
		if strings.HasPrefix(name, "/") {
			return detect.KindOpen, name
		}
		return "", ""
	case "connect", "sendto", "sendmsg", "sendmmsg", "":
		// no evt.type: only a destination or a file path says what it was
	default:
		return "", ""
	}
	if fdType == "unix" {
		if i := strings.LastIndexByte(name, ' '); i >= 0 {
			name = name[i+1:]
		}
		if strings.HasPrefix(name, "/") {
			return detect.KindConnect, name
		}
		return "", ""
	}
	for _, pair := range [][2]string{{"fd.sip", "fd.sport"}, {"fd.rip", "fd.rport"}} {
		ip := anyString(f[pair[0]])
		port, ok := anyInt(f[pair[1]])
		if ip != "" && ok {
			if k, o, ok := destination(ip, port); ok {
				return k, o
			}
		}
	}
	if i := strings.Index(name, "->"); i >= 0 {
		if ip, port, ok := splitHostPort(name[i+2:]); ok {
			if k, o, ok := destination(ip, port); ok {
				return k, o
			}
		}
	}
	if evt == "" && (fdType == "file" || fdType == "") && strings.HasPrefix(name, "/") {
		return detect.KindOpen, name
	}
	return "", ""
}
