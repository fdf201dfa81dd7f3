package probe_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func TestHuntFindsPlantedValuesAndUsesThem(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	write := func(rel, data string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".aws/credentials", "[default]\naws_secret_access_key = GHCANARY-home-aws-0011223344\n")
	write(".kube/config", "users:\n- user:\n    token: GHCANARY-home-kube-5566778899\n")
	write("notes.txt", "nothing here but GHCANARY- (too short) and ghc0123456789abcdef\n")
	// A projected service-account token: the file is a symlink.
	sa := filepath.Join(dir, "sa")
	os.MkdirAll(filepath.Join(sa, "..data"), 0o755)
	os.WriteFile(filepath.Join(sa, "..data", "token"), []byte("GHCANARY-serviceaccount-aabbccddeeff"), 0o600)
	os.Symlink("..data/token", filepath.Join(sa, "token"))

	sock := filepath.Join(dir, "cred.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The helper speaks first and closes without reading, as a real one
	// may: the probe's write then races the close (EPIPE or ECONNRESET),
	// and whichever way it goes the answer must be reported. The
	// deterministic EPIPE case is TestExchangeReadsAnswerAfterFailedWrite.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\n{\"token\":\"GHCANARY-socket-99887766\"}"))
			c.Close()
		}
	}()

	var mu sync.Mutex
	var presented []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		presented = append(presented, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()

	reps := runPlan(t, 3000,
		wire.Step{ID: "home", Kind: wire.KindHunt, Target: home, Use: []string{srv.URL + "/broker/v1/token"}},
		wire.Step{ID: "sa", Kind: wire.KindHunt, Target: sa},
		wire.Step{ID: "sock", Kind: wire.KindHunt, Target: sock},
		wire.Step{ID: "missing", Kind: wire.KindHunt, Target: filepath.Join(dir, "nope")},
	)
	expect(t, reps["home"], wire.OutcomeCompleted, "")
	for _, v := range []string{"GHCANARY-home-aws-0011223344", "GHCANARY-home-kube-5566778899"} {
		if !strings.Contains(reps["home"].Excerpt, v) {
			t.Errorf("home hunt missed %s: %q", v, reps["home"].Excerpt)
		}
	}
	if reps["home"].Bytes != 2 || strings.Contains(reps["home"].Excerpt, "ghc0123") {
		t.Errorf("home hunt reported %d values, want exactly the 2 canaries: %q", reps["home"].Bytes, reps["home"].Excerpt)
	}
	if !strings.Contains(reps["sa"].Excerpt, "GHCANARY-serviceaccount-aabbccddeeff") {
		t.Errorf("a token behind a symlink was missed: %q", reps["sa"].Excerpt)
	}
	if !strings.Contains(reps["sock"].Excerpt, "GHCANARY-socket-99887766") {
		t.Errorf("socket hunt: %q (%s)", reps["sock"].Excerpt, reps["sock"].Error)
	}
	// A place that does not exist is searched completely: nothing there.
	if r := reps["missing"]; r.Outcome != wire.OutcomeCompleted || r.Excerpt != "" || !strings.HasPrefix(r.Error, "nothing to search") {
		t.Errorf("hunt of a missing place: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(presented) != 2 || !strings.HasPrefix(presented[0], "Bearer GHCANARY-home-") {
		t.Errorf("found values were not presented as bearer tokens: %q", presented)
	}
}

func TestHuntReadsOtherProcessesEnvironment(t *testing.T) {
	sleeper := exec.Command("sleep", "30")
	sleeper.Env = []string{"DB_PASSWORD=GHCANARY-process-1234abcd"}
	if err := sleeper.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	reps := runPlan(t, 5000, wire.Step{ID: "proc", Kind: wire.KindHunt, Target: "proc"})
	if !strings.Contains(reps["proc"].Excerpt, "GHCANARY-process-1234abcd") {
		t.Errorf("proc hunt missed the other process's value: %q", reps["proc"].Excerpt)
	}
}

func TestHostChecksNeverWrite(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "core_pattern")
	os.WriteFile(f, []byte("core\n"), 0o644)
	reps := runPlan(t, 3000,
		wire.Step{ID: "w", Kind: wire.KindHostCheck, Target: "writable:" + f},
		wire.Step{ID: "absent", Kind: wire.KindHostCheck, Target: "writable:" + filepath.Join(dir, "none")},
		wire.Step{ID: "caps", Kind: wire.KindHostCheck, Target: "caps"},
		wire.Step{ID: "ns", Kind: wire.KindHostCheck, Target: "ns"},
		wire.Step{ID: "bogus", Kind: wire.KindHostCheck, Target: "format-disk"},
	)
	expect(t, reps["w"], wire.OutcomeCompleted, "exposed: "+f+" is writable")
	expect(t, reps["absent"], wire.OutcomeCompleted, "ok: "+filepath.Join(dir, "none")+" absent")
	if b, _ := os.ReadFile(f); string(b) != "core\n" {
		t.Errorf("a host check changed the file: %q", b)
	}
	if !strings.HasPrefix(reps["caps"].Excerpt, "ok:") && !strings.HasPrefix(reps["caps"].Excerpt, "exposed:") {
		t.Errorf("caps: %q", reps["caps"].Excerpt)
	}
	if !strings.Contains(reps["ns"].Excerpt, "pid:[") {
		t.Errorf("ns: %q", reps["ns"].Excerpt)
	}
	expect(t, reps["bogus"], wire.OutcomeError, "")
}
