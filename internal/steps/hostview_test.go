package steps

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func TestPasswdHomes(t *testing.T) {
	f := filepath.Join(t.TempDir(), "passwd")
	os.WriteFile(f, []byte("root:x:0:0:root:/root:/bin/bash\n"+
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"+
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"+
		"alice:x:1000:1000::/home/alice:/bin/bash\n"+
		"svc:x:1001:1001::/:/bin/false\n"+
		"broken line\n"+
		"bob:x:1002:1002::relative/home:/bin/sh\n"), 0o644)
	if got, want := passwdHomes(f), []string{"/root", "/home/alice"}; !reflect.DeepEqual(got, want) {
		t.Errorf("passwdHomes = %q, want %q", got, want)
	}
}

// The harness's own view of the host: / and /etc are always there.
func TestHostPathsNameRootAndEtc(t *testing.T) {
	kinds := map[string]string{}
	for _, p := range hostPaths() {
		if _, ok := wire.ParseFileID(p.ID); !ok {
			t.Errorf("%s: bad device:inode %q", p.Path, p.ID)
		}
		kinds[p.Path] = p.Kind
	}
	if kinds["/"] != evidence.HostRoot || kinds["/etc"] != evidence.HostEtc {
		t.Errorf("hostPaths = %v, want / as root and /etc as etc", kinds)
	}
}

// Only sockets a probe claimed are looked up, and the lab's own are named,
// never asked (asking would be recorded against their session).
func TestHostSocketsMatchesClaimsOnly(t *testing.T) {
	if got := hostSockets(context.Background(), []evidence.Attempt{{Excerpt: "ok: nothing"}}); got != nil {
		t.Errorf("no claim, yet %v", got)
	}
	bogus := []evidence.Attempt{{Excerpt: "engine docker 999:999:999 - /var/run/docker.sock"}}
	if got := hostSockets(context.Background(), bogus); len(got) != 0 {
		t.Errorf("a device:inode no host socket has matched %v", got)
	}
}

// Every value Gatehouse handed the scenario is ours, by hash.
func TestOursHashesEverythingHandedOut(t *testing.T) {
	ps := &plants{all: map[string]*plant{"s1": {
		planted: []evidence.Planted{{Place: "env/X", Value: "GHCANARY-env-x-00"}},
		broker:  "ghbroker-0011", nonce: "ghhost0011223344556677",
	}}}
	ctx := context.WithValue(context.Background(), plantKey{}, ps)
	m := ours(ctx, &scenario{canary: "ghc0011223344556677", control: "ghctl0011223344556677"})
	for _, v := range []string{"GHCANARY-env-x-00", "ghbroker-0011", "ghhost0011223344556677", "ghc0011223344556677", "ghctl0011223344556677"} {
		if m[wire.CredHash(v)] == "" {
			t.Errorf("%s is not counted as ours", v)
		}
	}
}
