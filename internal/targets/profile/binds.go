package profile

import (
	"fmt"
	"path"
	"strings"
)

// Bind is one mount the profile asks for: a host path (or a harness place)
// bound into the sandbox, or a docker volume or tmpfs.
type Bind struct {
	Type     string `json:"type"`               // bind | volume | tmpfs
	Source   string `json:"source,omitempty"`   // as written: {{place:NAME}} stays symbolic
	Target   string `json:"target"`             // path inside the sandbox
	ReadOnly bool   `json:"read_only"`          //
	Devices  bool   `json:"devices,omitempty"`  // bwrap --dev-bind: device nodes usable
	Optional bool   `json:"optional,omitempty"` // bwrap -try: skipped when the source is missing
	Field    string `json:"field"`              // where the profile says it, e.g. bwrap.args[31]
}

// Binds lists the profile's mounts in the order the runtime applies them
// (the kind's Description.Binds).
func (p *Profile) Binds() []Bind { return p.describe().Binds }

// BindSourceAt reports whether bwrap.args[i] is the source operand of one
// of the profile's bind options, and that bind.
func (p *Profile) BindSourceAt(i int) (Bind, bool) {
	for _, b := range p.Binds() {
		var at int
		if _, err := fmt.Sscanf(b.Field, "bwrap.args[%d]", &at); err == nil && at+1 == i {
			return b, true
		}
	}
	return Bind{}, false
}

// dangerous are well-known host paths whose bind gives the sandbox the host:
// its engine, its files, its kernel interfaces, its users' credentials.
// subtree: a path below it is as dangerous (a home folder's .ssh); without
// it only the path itself and its ancestors count (/etc/resolv.conf is a
// common, harmless bind; /etc is not).
var dangerous = []struct {
	path, what string
	subtree    bool
}{
	{"/", "the host's root filesystem", false},
	{"/run/docker.sock", "the Docker engine's API socket (control of the host)", true},
	{"/run/containerd", "containerd's sockets (control of the host's containers)", true},
	{"/run/podman", "podman's sockets (control of the host's containers)", true},
	{"/run/crio", "CRI-O's sockets (control of the host's containers)", true},
	{"/var/lib/docker", "Docker's data root (every container's files)", true},
	{"/proc", "the host's /proc (its processes and kernel interfaces)", true},
	{"/sys", "the host's /sys (kernel interfaces, cgroups)", true},
	{"/home", "the host's home folders (keys, tokens, credential files)", true},
	{"/root", "root's home folder (keys, tokens, credential files)", true},
	{"/etc", "the host's configuration (users, keys, service credentials)", false},
	{"/dev", "the host's device nodes", false},
}

// hostPath is a bind source as the host resolves it, "" when it is not a
// literal absolute host path (a {{place:NAME}}, a ./file of the profile).
func hostPath(src string) string {
	if !strings.HasPrefix(src, "/") || strings.Contains(src, "{{") {
		return ""
	}
	p := path.Clean(src)
	// /var/run is a symlink to /run on every distribution we run on.
	if p == "/var/run" || strings.HasPrefix(p, "/var/run/") {
		p = "/run" + strings.TrimPrefix(p, "/var/run")
	}
	return p
}

func under(p, dir string) bool {
	return dir == "/" || strings.HasPrefix(p, dir+"/")
}

// dangerousBind says why a bind source exposes the host, "" when it does not.
func dangerousBind(src string) string {
	p := hostPath(src)
	if p == "" {
		return ""
	}
	for _, d := range dangerous {
		if p == d.path || (d.subtree && d.path != "/" && under(p, d.path)) {
			return d.what
		}
	}
	var holds []string
	for _, d := range dangerous {
		if under(d.path, p) {
			holds = append(holds, d.path)
		}
	}
	if len(holds) > 0 {
		return "a folder holding " + strings.Join(holds, ", ")
	}
	return ""
}

// bindWarnings names every bind of a well-known dangerous host path. They
// are warnings, not errors: a profile may mean it (a negative control), and
// only the gates, from inside, prove what the sandbox can really reach.
func (v *validator) bindWarnings() []Warning {
	var out []Warning
	for _, b := range v.p.Binds() {
		if b.Type != "bind" {
			continue
		}
		what := dangerousBind(b.Source)
		if what == "" {
			continue
		}
		mode := "read-write"
		if b.ReadOnly {
			mode = "read-only"
		}
		if b.Devices {
			mode += ", devices usable"
		}
		out = append(out, Warning{File: v.file, Line: v.line(b.Field), Field: b.Field,
			Msg: fmt.Sprintf("binds host %s at %s (%s): %s", b.Source, b.Target, mode, what)})
	}
	return out
}

// Warning is something a profile may mean but an auditor must see: it is
// printed in the plan and recorded in the run, and never stops a run.
type Warning struct {
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Field string `json:"field"`
	Msg   string `json:"message"`
}

func (w Warning) String() string {
	loc := w.File
	if w.Line > 0 {
		loc += fmt.Sprintf(":%d", w.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, w.Field, w.Msg)
}

// Warnings are the loader's warnings, in profile order.
func (p *Profile) Warnings() []Warning {
	return append([]Warning(nil), p.facts.warnings...)
}
