package alerts

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

type tetragonProcess struct {
	PID    flexInt `json:"pid"`
	UID    flexInt `json:"uid"`
	AUID   flexInt `json:"auid"`
	Binary string  `json:"binary"`
	Docker string  `json:"docker"`
	Pod    *struct {
		Container *struct {
			ID string `json:"id"`
		} `json:"container"`
	} `json:"pod"`
}

type tetragonEvent struct {
	Process      tetragonProcess              `json:"process"`
	FunctionName string                       `json:"function_name"`
	PolicyName   string                       `json:"policy_name"`
	Args         []map[string]json.RawMessage `json:"args"`
}

type tetragonSockaddr struct {
	Family string  `json:"family"`
	Addr   string  `json:"addr"`
	Port   flexInt `json:"port"`
}

type tetragonSock struct {
	Family string  `json:"family"`
	Daddr  string  `json:"daddr"`
	Dport  flexInt `json:"dport"`
}

type tetragonFile struct {
	Path string `json:"path"`
}

// envelope keys of a Tetragon export line that are not the event key.
var tetragonEnvelope = map[string]bool{"node_name": true, "time": true, "cluster_name": true, "node_labels": true, "aggregation_info": true}

// ParseTetragon reads one line of Tetragon's JSON export: one event key
// (process_exec, process_kprobe, process_exit, ...) beside node_name and
// time. process_exec is Kind exec of process.binary; process_kprobe is
// connect/dns for a sockaddr_arg (addr, port) or sock_arg (daddr, dport),
// open for a file_arg or path_arg (path); its Rule is the policy_name (else
// the function_name). Keys: process.auid, process.pid, the container id
// from process.pod.container.id (scheme stripped) or process.docker
// (which Tetragon truncates: match it against the same truncation).
func ParseTetragon(raw []byte, received time.Time) ([]detect.Event, error) {
	var line map[string]json.RawMessage
	if err := decodeObject(raw, &line); err != nil {
		return nil, malformed(FormatTetragon, "decode", err)
	}
	e := detect.Event{Source: FormatTetragon, Received: received, Raw: raw}
	if t, ok := line["time"]; ok {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, malformed(FormatTetragon, "time", err)
		}
		if s != "" {
			ts, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, malformed(FormatTetragon, "time", err)
			}
			e.EventTime = ts
		}
	}
	var keys []string
	for k := range line {
		if !tetragonEnvelope[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		sort.Strings(keys)
		e.Rule = strings.Join(keys, ",")
		return []detect.Event{e}, nil // not one event: keep it, match nothing
	}
	kind := keys[0]
	e.Rule = kind
	body := line[kind]
	if len(body) == 0 || body[0] != '{' {
		return []detect.Event{e}, nil
	}
	var ev tetragonEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, malformed(FormatTetragon, kind, err)
	}
	p := ev.Process
	e.Key.LoginUID = loginUID(p.AUID.V, p.AUID.OK)
	if p.PID.OK && p.PID.V > 0 && p.PID.V <= 1<<31-1 {
		e.Key.PID = int(p.PID.V)
	}
	if p.Pod != nil && p.Pod.Container != nil && p.Pod.Container.ID != "" {
		e.Key.ContainerID = containerID(p.Pod.Container.ID)
	} else {
		e.Key.ContainerID = containerID(p.Docker)
	}
	switch kind {
	case "process_exec":
		if p.Binary != "" {
			e.Kind, e.Object = detect.KindExec, p.Binary
		}
	case "process_kprobe", "process_tracepoint", "process_uprobe", "process_lsm":
		if ev.PolicyName != "" {
			e.Rule = ev.PolicyName
		} else if ev.FunctionName != "" {
			e.Rule = ev.FunctionName
		}
		e.Kind, e.Object = tetragonArgs(ev.Args)
	}
	return []detect.Event{e}, nil
}

// tetragonArgs takes the first argument that names a destination or a path.
func tetragonArgs(args []map[string]json.RawMessage) (kind, object string) {
	for _, a := range args {
		if b, ok := a["sockaddr_arg"]; ok {
			var s tetragonSockaddr
			if json.Unmarshal(b, &s) == nil {
				if strings.EqualFold(s.Family, "AF_UNIX") && strings.HasPrefix(s.Addr, "/") {
					return detect.KindConnect, s.Addr
				}
				if k, o, ok := destination(s.Addr, s.Port.V); ok {
					return k, o
				}
			}
		}
		if b, ok := a["sock_arg"]; ok {
			var s tetragonSock
			if json.Unmarshal(b, &s) == nil {
				if k, o, ok := destination(s.Daddr, s.Dport.V); ok {
					return k, o
				}
			}
		}
		for _, name := range []string{"file_arg", "path_arg"} {
			if b, ok := a[name]; ok {
				var f tetragonFile
				if json.Unmarshal(b, &f) == nil && f.Path != "" {
					return detect.KindOpen, f.Path
				}
			}
		}
	}
	return "", ""
}
