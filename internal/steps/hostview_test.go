package steps

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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

// A socket silent to the probe is asked from outside with more time than
// the probe had: a dockerd that takes 1.5 s (starved) answers here, so
// the verdict can name it (issue 22, C2).
func TestHostSocketsAsksSilentClaimsWithMoreTime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "slow-docker.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1500 * time.Millisecond)
		w.Header().Set("Api-Version", "1.41")
		if r.URL.Path == "/version" {
			w.Write([]byte(`{"Version":"20.10.24","ApiVersion":"1.41"}`))
			return
		}
		w.Write([]byte("OK"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	id, err := wire.StatID(p)
	if err != nil {
		t.Fatal(err)
	}
	got := hostSockets(context.Background(), []evidence.Attempt{{Excerpt: "ok: no container engine API answered on 1 sockets\nsilent " + id.String() + " /var/run/docker.sock"}})
	if len(got) != 1 || got[0].Path != p || !strings.HasPrefix(got[0].Answer, "docker ") || got[0].Silent {
		t.Errorf("hostSockets = %+v, want %s answering as docker", got, p)
	}
	// One silent to the harness too is said to be: the verdict cannot
	// call a socket by an engine's name no engine then.
	q := filepath.Join(t.TempDir(), "docker.sock")
	mute, err := net.Listen("unix", q)
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	qid, err := wire.StatID(q)
	if err != nil {
		t.Fatal(err)
	}
	got = hostSockets(context.Background(), []evidence.Attempt{{Excerpt: "silent " + qid.String() + " /var/run/docker.sock"}})
	if len(got) != 1 || got[0].Path != q || got[0].Answer != "" || !got[0].Silent {
		t.Errorf("hostSockets = %+v, want %s silent", got, q)
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
