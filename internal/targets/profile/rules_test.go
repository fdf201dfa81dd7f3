package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// One mistake each, in the options and fields a target would refuse only
// at session start: Load refuses them with the field and a reason.
func TestLoadRefusesWhatTargetsWouldRefuse(t *testing.T) {
	bw := func(args string) string {
		return strings.Replace(base, "args: [--unshare-user, --unshare-net]", "args: ["+args+"]", 1)
	}
	dk := func(section string) string { return dockerBase + "target: docker\ndocker:\n" + section }
	for _, tc := range []struct {
		name, yaml, field, msg string
	}{
		{"option at the end without its value", bw("--unshare-user, --tmpfs"), "bwrap.args", "--tmpfs takes DEST, but the list ends before its DEST"},
		{"stray operand", bw("--unshare-user, --ro-bind, /usr, /usr, /lib"), "bwrap.args", `"/lib" is not an option, and bwrap would take it as the command`},
		{"help starts no sandbox", bw("--unshare-user, --help"), "bwrap.args", "prints and exits"},
		{"size not before tmpfs", bw("--unshare-user, --size, '1024', --dir, /x"), "bwrap.args", "--size must come right before --tmpfs"},
		{"bad octal", bw("--unshare-user, --perms, '999', --dir, /x"), "bwrap.args", "not an octal mode"},
		{"unknown capability dropped", bw("--unshare-user, --cap-drop, CAP_NET_RAWW"), "bwrap.args", "not a capability name"},
		{"descriptor bind", bw("--unshare-user, --bind-fd, '3', /x"), "bwrap.args", "use --bind"},
		{"unknown capability on a path", strings.Replace(base, "gid: 0}", "gid: 0, cap_add: [CAP_NET_RAWW]}", 1), "paths.assume-breach.cap_add", "capability"},
		{"reference without a kind", bw("--unshare-user, --bind, '{{storage}}', /w"), "bwrap.args", "unknown reference"},
		{"unclosed reference", base + "env: {T: '{{secret:aws-secret'}\n", "env.T", "unclosed"},
		{"multicast resolver", base + "resolver: 224.0.0.251\n", "resolver", "not a unicast address"},
		{"unspecified resolver", base + "resolver: '::'\n", "resolver", "not a unicast address"},
		{"reference in stop_command", base + "limits: {stop_command: ['{{place:host}}/stop']}\n", "limits.stop_command", "not expanded here"},
		{"docker runtime the lab lacks", dk("  runtime: kata\n"), "docker.runtime", "runc or runsc"},
		{"docker pid of another container", dk("  pid: container:x\n"), "docker.pid", "only host"},
		{"docker ipc typo", dk("  ipc: hots\n"), "docker.ipc", "not private, shareable, host or none"},
		{"docker negative cpus", dk("  cpus: -1\n"), "docker.cpus", "negative"},
		{"docker security_opt typo", dk("  security_opt: [no-new-priviledges]\n"), "docker.security_opt[0]", "not KEY=VALUE"},
		{"docker seccomp in security_opt", dk("  security_opt: ['seccomp=unconfined']\n"), "docker.security_opt[0]", "docker.seccomp"},
		{"docker seccomp not JSON", dk("  seccomp: '{\"defaultAction\": '\n"), "docker.seccomp", "not valid JSON"},
		{"docker volume that is a path", dk("  mounts: [{type: volume, source: /data, target: /d}]\n"), "docker.mounts[0].source", "use type bind"},
		{"docker tmpfs with a source", dk("  mounts: [{type: tmpfs, source: x, target: /t}]\n"), "docker.mounts[0].source", "no source"},
		{"docker duplicate target", dk("  mounts: [{type: tmpfs, target: /t}, {type: tmpfs, target: /t}]\n"), "docker.mounts[1].target", "also the target"},
		{"docker reference in a target", dk("  mounts: [{type: bind, source: /srv, target: '/x/{{place:home}}'}]\n"), "docker.mounts[0].target", "sources only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kinds.Load(writeProfile(t, tc.yaml, nil))
			var pe *profile.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Load() = %v, want *profile.Error", err)
			}
			if pe.Field != tc.field || pe.Line == 0 || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q (field %q, line %d); want field %q, a line, and %q", err, pe.Field, pe.Line, tc.field, tc.msg)
			}
		})
	}
}

// Harmless variants of the same options still load.
func TestLoadAcceptsCorrectOptions(t *testing.T) {
	for _, y := range []string{
		strings.Replace(base, "--unshare-net]", "--unshare-net, --size, '1048576', --tmpfs, /tmp, --perms, '0700', --dir, /x, --setenv, A, --not-an-option-value]", 1),
		strings.Replace(base, "--unshare-net]", "--unshare-net, --cap-drop, cap_net_raw, --bind-try, '{{place:shared}}/tmp', /tmp]", 1),
		base + "resolver: 127.0.0.53\n",
		dockerBase + "target: docker\ndocker:\n  cap_add: [net_admin, CAP_NET_RAW]\n  security_opt: ['no-new-privileges:true', apparmor=unconfined]\n" +
			"  mounts: [{type: volume, source: cache, target: /c}, {type: tmpfs, target: /t}]\n",
	} {
		if _, err := kinds.Load(writeProfile(t, y, nil)); err != nil {
			t.Errorf("Load() = %v for\n%s", err, y)
		}
	}
}
