package profile_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/ledger"
	"github.com/gatehouse-dev/gatehouse/internal/scratch"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// The harness's own folders (staging, spools, places, the ledger) are
// never given to a sandbox: a profile that binds them, in any mode, or
// binds a folder holding them writable, or names them in a wrapper's
// arguments or policy files, is refused with the field and line. Binding
// the host read-only, or places of the run, stays allowed.
func TestHarnessFoldersAreNeverBound(t *testing.T) {
	for _, d := range []string{scratch.Base, ledger.Root} {
		if !strings.HasPrefix(d, profile.HarnessDir+"/") {
			t.Fatalf("%s is not under %s: the profile check would not cover it", d, profile.HarnessDir)
		}
	}
	bind := func(opt, src string) string {
		return strings.Replace(base, "--unshare-net]", "--unshare-net, "+opt+", '"+src+"', /mnt/x]", 1)
	}
	mount := func(src string, ro bool) string {
		m := "{type: bind, source: '" + src + "', target: /mnt/x}"
		if ro {
			m = "{type: bind, source: '" + src + "', target: /mnt/x, read_only: true}"
		}
		return dockerBase + "target: docker\ndocker:\n  mounts: [" + m + "]\n"
	}
	wrapper := "name: w\nnetwork: lab\npaths:\n  normal: {uid: 1000, gid: 1000}\n  assume-breach: {uid: 0, gid: 0}\n"
	srt := map[string]string{"s.json": `{"filesystem": {"allowWrite": ["/gatehouse/work", "/var/run/gatehouse/scratch"]}}`}
	for _, tc := range []struct {
		name, yaml string
		files      map[string]string
		refuse     string // "" = loads
	}{
		{"the harness's folder", bind("--bind", "/run/gatehouse"), nil, "bwrap.args"},
		{"below it, read-only", bind("--ro-bind", "/run/gatehouse/scratch"), nil, "bwrap.args"},
		{"below it, spelled through /var/run", bind("--bind-try", "/var/run/gatehouse/own"), nil, "bwrap.args"},
		{"below it, spelled with // and ..", bind("--bind", "//run/x/../gatehouse/"), nil, "bwrap.args"},
		{"the host's root writable", bind("--bind", "/"), nil, "bwrap.args"},
		{"/run writable, with devices", bind("--dev-bind", "/run"), nil, "bwrap.args"},
		{"a docker mount of /run writable", mount("/run", false), nil, "docker.mounts"},
		{"a docker mount of the harness's folder read-only", mount("/run/gatehouse", true), nil, "docker.mounts"},
		{"a place climbing out with ..", bind("--bind", "{{place:storage}}/../.."), nil, "bwrap.args"},
		{"an exec wrapper naming it", wrapper + "target: exec\nexec: {argv: [sb, --allow-write=/run/gatehouse/scratch, --]}\n", nil, "exec.argv"},
		{"an srt policy naming it", wrapper + "target: srt\nsrt: {settings: s.json}\n", srt, "srt.settings"},
		{"the host's root read-only", bind("--ro-bind", "/"), nil, ""},
		{"/run read-only", bind("--ro-bind", "/run"), nil, ""},
		{"a place", bind("--bind", "{{place:shared}}/tmp"), nil, ""},
		{"a name that only starts alike", bind("--bind", "/run/gatehouse-other"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kinds.Load(writeProfile(t, tc.yaml, tc.files))
			switch {
			case tc.refuse == "" && err != nil:
				t.Fatalf("Load() = %v, want it to load", err)
			case tc.refuse == "":
			case err == nil:
				t.Fatal("Load() accepted a profile that gives a sandbox the harness's own folders")
			case !strings.Contains(err.Error(), tc.refuse) || !strings.Contains(err.Error(), profile.HarnessDir):
				t.Fatalf("Load() = %v, want a refusal naming %s and %s", err, tc.refuse, profile.HarnessDir)
			}
		})
	}
	// Every shipped profile still loads, the leaky ones included.
	names, err := fs.Glob(profiles.FS, "*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("shipped profiles: %v %v", names, err)
	}
	for _, n := range names {
		if _, err := kinds.LoadFS(profiles.FS, n); err != nil {
			t.Errorf("shipped %s: %v", n, err)
		}
	}
}
