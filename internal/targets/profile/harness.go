package profile

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// HarnessDir holds the harness's own folders on the host: sessions'
// staging (their init binary, policy files, work folders), report spools,
// places, the run ledger, the inits' sockets, planted canaries. A sandbox
// that could write it could swap another session's init or policy, or a
// report the harness signs; no profile may hand it over.
const HarnessDir = "/run/gatehouse"

// harness refuses a profile that gives a sandbox the harness's own folders:
// a bind or mount of HarnessDir or below, in any mode, or of a folder
// holding it (/, /run) writable; a path below a {{place:NAME}} that climbs
// out of it with ".."; and HarnessDir named anywhere in a wrapper's
// arguments or policy files. A dangerous bind of the host elsewhere stays
// a warning (the gates measure what it gives away); this one would turn
// the harness against its host, so nothing could be measured.
func (v *validator) harness() error {
	for _, b := range v.p.Binds() {
		if b.Type != "bind" {
			continue
		}
		if i := strings.LastIndex(b.Source, "}}"); i >= 0 && climbs(b.Source[i+2:]) {
			return v.fail(b.Field, fmt.Errorf("bind source %q climbs out of its place with \"..\": places live in %s, the harness's own folders, never given to a sandbox", b.Source, HarnessDir))
		}
		p := hostPath(b.Source)
		switch {
		case p == "":
		case p == HarnessDir || under(p, HarnessDir):
			return v.fail(b.Field, fmt.Errorf("binds %s: %s holds the harness's own folders and is never given to a sandbox", b.Source, HarnessDir))
		case !b.ReadOnly && under(HarnessDir, p):
			return v.fail(b.Field, fmt.Errorf("binds %s writable: it holds %s, the harness's own folders, which a sandbox must not write (bind it read-only, or bind what the agent needs)", b.Source, HarnessDir))
		}
	}
	for _, l := range v.p.describe().Words {
		for i, a := range l.List {
			if namesHarness(a) {
				return v.failItem(l.Field, i, fmt.Errorf("%s[%d] %q names %s, the harness's own folders: never given to a sandbox", l.Field, i, a, HarnessDir))
			}
		}
	}
	names := make([]string, 0, len(v.p.files))
	for n := range v.p.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if namesHarness(string(v.p.files[n])) {
			return v.fail(v.section(), fmt.Errorf("policy file %s names %s, the harness's own folders: never given to a sandbox", n, HarnessDir))
		}
	}
	return nil
}

// section is where the profile names its policy files, for messages.
func (v *validator) section() string {
	if f := v.p.describe().PolicyField; f != "" {
		return f
	}
	return "target"
}

// climbs reports whether a path below a place has a ".." element.
func climbs(rest string) bool {
	for _, e := range strings.Split(rest, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// pathToken is anything in free text that may be an absolute path.
var pathToken = regexp.MustCompile(`/[^\s"'=,:;\[\]{}()<>|&]*`)

// namesHarness reports whether free text (an argument, a policy file)
// names HarnessDir or a path below it, however spelled (/var/run, //, ..).
func namesHarness(s string) bool {
	for _, t := range pathToken.FindAllString(s, -1) {
		p := path.Clean(t)
		if p == "/var/run" || strings.HasPrefix(p, "/var/run/") {
			p = "/run" + strings.TrimPrefix(p, "/var/run")
		}
		if p == HarnessDir || under(p, HarnessDir) {
			return true
		}
	}
	return false
}
