package alerts

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// ocsfClassDetectionFinding is OCSF's Detection Finding class.
const ocsfClassDetectionFinding = 2004

type ocsfEndpoint struct {
	IP       string  `json:"ip"`
	Port     flexInt `json:"port"`
	Hostname string  `json:"hostname"`
}

type ocsfFile struct {
	Path string `json:"path"`
}

type ocsfContainer struct {
	UID string `json:"uid"`
}

type ocsfProcess struct {
	PID       flexInt        `json:"pid"`
	AUID      flexInt        `json:"auid"`
	File      *ocsfFile      `json:"file"`
	Container *ocsfContainer `json:"container"`
}

type ocsfEvidence struct {
	Process *ocsfProcess `json:"process"`
	Actor   *struct {
		Process *ocsfProcess `json:"process"`
	} `json:"actor"`
	DstEndpoint *ocsfEndpoint `json:"dst_endpoint"`
	Query       *struct {
		Hostname string `json:"hostname"`
	} `json:"query"`
	File      *ocsfFile      `json:"file"`
	Container *ocsfContainer `json:"container"`
}

type ocsfFinding struct {
	ClassUID    flexInt `json:"class_uid"`
	Time        flexInt `json:"time"`
	FindingInfo struct {
		UID      string `json:"uid"`
		Title    string `json:"title"`
		Analytic struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"analytic"`
	} `json:"finding_info"`
	Resources []struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"resources"`
	Evidences []ocsfEvidence `json:"evidences"`
	Unmapped  map[string]any `json:"unmapped"`
}

// ParseOCSF reads an OCSF Detection Finding (class_uid 2004), or a JSON
// array of them. OCSF is an envelope: producers fill different parts, so
// this reads what is commonly there and documents it (docs/alerts.md).
// Rule: finding_info.analytic.name, else .title, else .uid. Kind and
// Object from the first evidence that has one: query.hostname → dns (the
// name); dst_endpoint ip+port → connect (dns on port 53); file.path →
// open. No exec: a finding's process is its actor, not what it ran. Keys:
// the evidence's process (or actor.process) pid and auid, a container uid
// (evidence, process, or a resource of type "container"), else
// unmapped.loginuid. EventTime: time (epoch milliseconds). Other classes
// are kept with Kind "".
func ParseOCSF(raw []byte, received time.Time) ([]detect.Event, error) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(t, &items); err != nil {
			return nil, malformed(FormatOCSF, "decode array", err)
		}
		var out []detect.Event
		for _, it := range items {
			es, err := parseOCSFOne(it, received)
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		}
		if out == nil {
			return nil, malformed(FormatOCSF, "empty array", nil)
		}
		return out, nil
	}
	return parseOCSFOne(raw, received)
}

func parseOCSFOne(raw []byte, received time.Time) ([]detect.Event, error) {
	var f ocsfFinding
	if err := decodeObject(raw, &f); err != nil {
		return nil, malformed(FormatOCSF, "decode", err)
	}
	e := detect.Event{Source: FormatOCSF, Received: received, Raw: raw}
	if f.Time.OK && f.Time.V > 0 {
		e.EventTime = time.UnixMilli(f.Time.V).UTC()
	}
	fi := f.FindingInfo
	for _, r := range []string{fi.Analytic.Name, fi.Title, fi.UID} {
		if r != "" {
			e.Rule = r
			break
		}
	}
	if !f.ClassUID.OK || f.ClassUID.V != ocsfClassDetectionFinding {
		return []detect.Event{e}, nil
	}
	for _, ev := range f.Evidences {
		p := ev.Process
		if p == nil && ev.Actor != nil {
			p = ev.Actor.Process
		}
		if p != nil {
			if e.Key.LoginUID == 0 {
				e.Key.LoginUID = loginUID(p.AUID.V, p.AUID.OK)
			}
			if e.Key.PID == 0 && p.PID.OK && p.PID.V > 0 && p.PID.V <= 1<<31-1 {
				e.Key.PID = int(p.PID.V)
			}
			if e.Key.ContainerID == "" && p.Container != nil {
				e.Key.ContainerID = containerID(p.Container.UID)
			}
		}
		if e.Key.ContainerID == "" && ev.Container != nil {
			e.Key.ContainerID = containerID(ev.Container.UID)
		}
		if e.Kind != "" {
			continue
		}
		switch {
		case ev.Query != nil && dnsName(ev.Query.Hostname) != "":
			e.Kind, e.Object = detect.KindDNS, dnsName(ev.Query.Hostname)
		case ev.DstEndpoint != nil && ev.DstEndpoint.IP != "":
			if k, o, ok := destination(ev.DstEndpoint.IP, ev.DstEndpoint.Port.V); ok {
				e.Kind, e.Object = k, o
			}
		case ev.File != nil && strings.HasPrefix(ev.File.Path, "/"):
			e.Kind, e.Object = detect.KindOpen, ev.File.Path
		}
	}
	if e.Key.ContainerID == "" {
		for _, r := range f.Resources {
			if strings.EqualFold(r.Type, "container") && r.UID != "" {
				e.Key.ContainerID = containerID(r.UID)
				break
			}
		}
	}
	if e.Key.LoginUID == 0 && f.Unmapped != nil {
		v, ok := anyInt(f.Unmapped["loginuid"])
		e.Key.LoginUID = loginUID(v, ok)
	}
	return []detect.Event{e}, nil
}
