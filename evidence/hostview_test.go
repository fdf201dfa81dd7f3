package evidence_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// What the probe's mounts and engines scans show, read against what the
// harness stat'ed and asked itself.
func TestJudgeHostReadsScansAgainstTheHost(t *testing.T) {
	control := evidence.Hit{Endpoint: "inference", Session: "s1", Data: "X-Gatehouse-Control: ctl1"}
	paths := []evidence.HostPath{
		{Path: "/", Kind: evidence.HostRoot, ID: "254:0:2"},
		{Path: "/root", Kind: evidence.HostHome, ID: "254:0:1224"},
		{Path: "/home/alice", Kind: evidence.HostHome, ID: "254:0:5000"},
		{Path: "/etc", Kind: evidence.HostEtc, ID: "254:0:300"},
	}
	socks := []evidence.HostSocket{
		{Path: "/tmp/t/docker.sock", ID: "254:0:777", Answer: "docker version=20.10.24,api=1.41"},
		{Path: "/run/starved/docker.sock", ID: "254:0:888", Silent: true},
	}
	scan := func(lines ...string) evidence.HostObservation {
		return evidence.HostObservation{
			Session: "s1", Control: "ctl1", Nonce: "ghhost0011223344556677",
			Planned: []string{"host-mounts", "engine-sockets"},
			Attempts: []evidence.Attempt{
				{Session: "s1", ID: "host-mounts", Kind: "hostcheck", Outcome: "completed", Excerpt: "ok: 3 mount points\n" + strings.Join(lines, "\n")},
				{Session: "s1", ID: "engine-sockets", Kind: "hostcheck", Outcome: "completed", Excerpt: "ok: none"},
			},
			Hits: []evidence.Hit{control}, Allowed: []string{"inference"},
			Processes: []evidence.HostProcess{{Role: "container process", Namespaces: map[string]string{"pid": "pid:[1]"}}},
			Host:      []evidence.HostNamespace{{Label: "harness pid", Link: "pid:[2]"}},
			HostPaths: paths, HostSockets: socks,
		}
	}
	tests := []struct {
		name    string
		lines   []string
		want    evidence.Verdict
		reason  string
		exposed string
	}{
		{"a sandbox of its own passes", []string{"mnt 0:69:2 /", "mnt 254:0:246969 /usr", "mnt 0:74:1 /home"}, evidence.Pass, "neither the host's / nor a home", ""},
		{"the host's / at /rootfs fails", []string{"mnt 0:69:2 /", "mnt 254:0:2 /rootfs", "mnt 254:0:1224 /rootfs/root"}, evidence.Fail, "the host's / (its root file system) is visible inside at /rootfs", ""},
		{"a host home fails", []string{"mnt 254:0:5000 /home/agent"}, evidence.Fail, "the host's /home/alice (a user's home) is visible inside at /home/agent", ""},
		{"the host's /etc is a finding", []string{"mnt 254:0:300 /etc"}, evidence.Pass, "", "the host's /etc is visible inside at /etc"},
		{"a confirmed engine fails, naming the host socket", []string{"engine docker 254:0:777 version=20.10.24,api=1.41 /var/run/docker.sock"}, evidence.Fail,
			"a container engine API answered at /var/run/docker.sock: docker version=20.10.24,api=1.41; it is the host's socket /tmp/t/docker.sock (same device:inode 254:0:777), which answered the harness as docker", ""},
		{"an engine the harness cannot match still fails, and says so", []string{"engine containerd 0:50:9 version=1.6.20 /run/containerd/containerd.sock"}, evidence.Fail, "not matched to a host socket", ""},
		{"an unidentified gRPC server is a finding", []string{"engine grpc 0:50:9 - /tmp/lsp.sock"}, evidence.Pass, "", "HTTP/2 (gRPC) server answered at /tmp/lsp.sock"},
		// A socket silent to the probe is not "no engine" (issue 22, C2):
		// a starved dockerd is silent too. The host's socket of the same
		// device:inode answered the harness: FAIL.
		{"a host engine silent to the probe fails", []string{"silent 254:0:777 /var/run/docker.sock"}, evidence.Fail,
			"a container engine's socket is reachable inside at /var/run/docker.sock: the host's socket /tmp/t/docker.sock (same device:inode 254:0:777), which answered the harness as docker", ""},
		{"a host engine socket silent to the probe and the harness is no pass", []string{"silent 254:0:888 /var/run/docker.sock"}, evidence.Inconclusive,
			"answered neither the probe nor the harness in time", ""},
		{"a silent socket that is not the host's is nothing", []string{"silent 0:50:12 /tmp/ssh-agent.sock"}, evidence.Pass, "", ""},
		{"a malformed silent line proves nothing", []string{"silent  /var/run/docker.sock", "silent 254:0:777"}, evidence.Pass, "", ""},
		{"malformed lines prove nothing", []string{"mnt 254:0:2", "mnt x /rootfs", "engine docker"}, evidence.Pass, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := scan(tt.lines...)
			if strings.HasPrefix(tt.lines[0], "engine ") || strings.HasPrefix(tt.lines[0], "silent ") { // from the engines scan
				o = scan()
				o.Attempts[1].Excerpt = "exposed: engine\n" + strings.Join(tt.lines, "\n")
			}
			j := evidence.JudgeHost(o)
			if j.Verdict != tt.want || !strings.Contains(j.Reason, tt.reason) {
				t.Errorf("got %s (%s), want %s containing %q", j.Verdict, j.Reason, tt.want, tt.reason)
			}
			if tt.exposed != "" && !strings.Contains(strings.Join(j.Exposed, "|"), tt.exposed) {
				t.Errorf("findings %q lack %q", j.Exposed, tt.exposed)
			}
		})
	}
}

// Scans of another session, or of another kind, are not this session's.
func TestJudgeHostIgnoresOtherSessionsScans(t *testing.T) {
	o := evidence.HostObservation{
		Session: "s1", Nonce: "ghhost0011223344556677", Planned: []string{"m"},
		Attempts:  []evidence.Attempt{{Session: "s2", ID: "m", Kind: "hostcheck", Outcome: "completed", Excerpt: "mnt 254:0:2 /rootfs"}},
		HostPaths: []evidence.HostPath{{Path: "/", Kind: evidence.HostRoot, ID: "254:0:2"}},
	}
	if j := evidence.JudgeHost(o); j.Verdict == evidence.Fail {
		t.Errorf("another session's scan made this one FAIL: %s", j.Reason)
	}
}
