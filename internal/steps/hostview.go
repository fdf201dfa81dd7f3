package steps

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/unixsock"
)

// maxHomes bounds the host homes the harness stats.
const maxHomes = 64

// hostPaths are the host folders whose appearance inside a sandbox is host
// access (/, /root, /home, every /home/* and every home /etc/passwd names
// for root or a regular user) or a finding (/etc), each with the
// device:inode the harness reads itself. The probe's "mounts" scan is
// compared against them.
func hostPaths() []evidence.HostPath {
	var out []evidence.HostPath
	seen := map[string]bool{}
	add := func(p, kind string) {
		if seen[p] || len(out) >= maxHomes+4 {
			return
		}
		seen[p] = true
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return
		}
		if id, err := wire.StatID(p); err == nil {
			out = append(out, evidence.HostPath{Path: p, Kind: kind, ID: id.String()})
		}
	}
	add("/", evidence.HostRoot)
	add("/etc", evidence.HostEtc)
	add("/root", evidence.HostHome)
	add("/home", evidence.HostHome)
	homes, _ := filepath.Glob("/home/*")
	for _, h := range homes {
		add(h, evidence.HostHome)
	}
	for _, h := range passwdHomes("/etc/passwd") {
		add(h, evidence.HostHome)
	}
	return out
}

// passwdHomes are the homes of root and of regular users (uid >= 1000,
// not nobody) in an /etc/passwd file.
func passwdHomes(file string) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < maxHomes {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 {
			continue
		}
		uid, err := strconv.Atoi(fields[2])
		home := filepath.Clean(fields[5])
		if err != nil || (uid != 0 && (uid < 1000 || uid == 65534)) || home == "/" || !filepath.IsAbs(home) {
			continue
		}
		out = append(out, home)
	}
	return out
}

// hostAskTimeout bounds one question the harness asks a host socket.
const hostAskTimeout = 3 * time.Second

// hostSockets are the host's unix sockets whose device:inode a probe
// reported for an engine answer, each with what it answered the harness
// when asked from outside (read-only, as the probe asks). Candidates are
// the sockets bound in the harness's own network namespace
// (/proc/net/unix) and the engines' well-known paths. The lab's own
// sockets (under plantRoot) are named, never asked: a contact with one is
// recorded against the session it serves.
func hostSockets(ctx context.Context, attempts []evidence.Attempt) []evidence.HostSocket {
	claimed := map[string]bool{}
	for _, a := range attempts {
		for _, line := range strings.Split(a.Excerpt, "\n") {
			f := strings.Fields(line)
			var idField string
			switch {
			case len(f) >= 5 && f[0] == "engine":
				idField = f[2]
			case len(f) >= 3 && f[0] == "silent":
				// Silent to the probe: asked here, with more time.
				idField = f[1]
			}
			if id, ok := wire.ParseFileID(idField); ok {
				claimed[id.String()] = true
			}
		}
	}
	if len(claimed) == 0 {
		return nil
	}
	var out []evidence.HostSocket
	seen := map[string]bool{}
	for _, p := range append(unixSocketPaths(), unixsock.WellKnownSockets...) {
		id, err := wire.StatID(p)
		if err != nil || !claimed[id.String()] || seen[id.String()] {
			continue
		}
		seen[id.String()] = true
		hs := evidence.HostSocket{Path: p, ID: id.String()}
		if strings.HasPrefix(p, plantRoot+"/") {
			hs.Answer = "the lab's own fake engine (not asked: it records every contact)"
		} else {
			// Three seconds a question, where the probe had one: an
			// engine silent inside on a loaded machine answers here.
			actx, cancel := context.WithTimeout(unixsock.WithAskTimeout(ctx, hostAskTimeout), 3*hostAskTimeout)
			ans, _ := unixsock.AskEngine(actx, p)
			if ans.Engine() {
				hs.Answer = ans.Type + " " + ans.Detail
			}
			hs.Silent = ans.Silent
			cancel()
		}
		out = append(out, hs)
	}
	return out
}

// unixSocketPaths lists the paths of unix sockets bound in the harness's
// network namespace.
func unixSocketPaths() []string { return unixsock.BoundSockets(1 << 16) }
