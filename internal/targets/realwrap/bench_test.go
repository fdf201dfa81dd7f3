package realwrap_test

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// benchUID is the normal path's user in the shipped profiles: both the
// session and the bare wrapper run as it.
const benchUID = 1000

// BenchmarkColdStart measures, per real wrapper profile, a session's cold
// start (Start, Exec true, Stop) next to the wrapper's own bare start with
// the same policy (`srt --settings S -- true`, `CODEX_HOME=H codex sandbox
// -P P -C D -- true`), both as uid 1000 in a namespace with only lo, and
// reports the ratio session/bare.
func BenchmarkColdStart(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: joins network namespaces, mounts, cgroups")
	}
	for _, name := range []string{"srt-default.yaml", "codex-workspace-write.yaml", "codex-network-proxy.yaml"} {
		b.Run(strings.TrimSuffix(name, ".yaml"), func(b *testing.B) {
			p, err := kinds.LoadFS(profiles.FS, name)
			if err != nil {
				b.Fatal(err)
			}
			cache := agents.DefaultCache(os.Getenv)
			tgt := newTarget(b, exec.Options{Profile: p, Root: b.TempDir(), Init: probetest.Build(b)})
			b.Cleanup(func() { _ = tgt.Close(context.Background()) })
			bare := bareWrapper(b, cache, p)
			nw := emptyNetns(b)
			ctx := context.Background()
			// One of each first, untimed: the tool's files in the page cache.
			session(b, ctx, tgt, nw)
			bare.run(b, nw)
			var inSession, alone time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				session(b, ctx, tgt, nw)
				t1 := time.Now()
				bare.run(b, nw)
				inSession += t1.Sub(t0)
				alone += time.Since(t1)
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(inSession.Milliseconds())/n, "session-ms/op")
			b.ReportMetric(float64(alone.Milliseconds())/n, "bare-ms/op")
			b.ReportMetric(float64(inSession)/float64(alone), "session/bare")
		})
	}
}

func session(b *testing.B, ctx context.Context, tgt targets.Target, nw targets.Network) {
	s, err := tgt.Start(ctx, withPlaces(b, targets.Spec{Name: "bench", Path: targets.PathNormal, Network: nw}))
	if err != nil {
		b.Fatal(err)
	}
	res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/true"}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("exec: %v %+v", err, res)
	}
	if err := s.Stop(ctx); err != nil {
		b.Fatal(err)
	}
}

// bare is the wrapper run on its own: argv, environment and folder.
type bare struct {
	argv []string
	env  []string
	dir  string
}

// bareWrapper lays out what the wrapper needs on the host, owned by the
// benchmark's user, outside /tmp (Codex refuses a CODEX_HOME under /tmp):
// its policy files, a work folder, CODEX_HOME with config.toml.
func bareWrapper(b *testing.B, cache agents.Cache, p *profile.Profile) bare {
	tools, err := cache.WrapperTools(p.Target)
	if err != nil {
		b.Skip(err)
	}
	root, err := os.MkdirTemp("/var/tmp", "gh-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	work := filepath.Join(root, "work")
	w := p.Wrapper()
	files := map[string]string{}
	for name, key := range w.Files {
		data, _ := p.File(key)
		files[name] = filepath.Join(root, name)
		if err := os.WriteFile(files[name], data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		b.Fatal(err)
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8"}
	for k, v := range w.Env {
		if k == "CODEX_HOME" {
			v = filepath.Join(root, "codex-home")
			data, _ := p.File(w.Files[w.WorkFiles[".codex/config.toml"]])
			if err := os.MkdirAll(v, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(v, "config.toml"), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		env = append(env, k+"="+v)
	}
	if err := filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, benchUID, benchUID)
	}); err != nil {
		b.Fatal(err)
	}
	var argv []string
	for _, a := range w.Argv {
		if strings.HasPrefix(a, "{{file:") {
			a = files[strings.TrimSuffix(strings.TrimPrefix(a, "{{file:"), "}}")]
		}
		argv = append(argv, strings.ReplaceAll(a, exec.InsideWork, work))
	}
	if t, ok := tools[argv[0]]; ok {
		argv = append(append([]string(nil), t...), argv[1:]...)
	}
	return bare{argv: append(argv, "/bin/true"), env: env, dir: work}
}

// run starts the bare wrapper as benchUID from a thread in the session's
// namespace, and waits for it.
func (w bare) run(b *testing.B, nw targets.Network) {
	done := make(chan error, 1)
	var out strings.Builder
	go func() {
		// Never unlocked: the thread ends with the goroutine, namespace and all.
		runtime.LockOSThread()
		fd, err := unix.Open(nw.NetnsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			done <- err
			return
		}
		cmd := osexec.Command(w.argv[0], w.argv[1:]...)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = w.env, w.dir, &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: benchUID, Gid: benchUID, Groups: []uint32{}}}
		done <- cmd.Run()
	}()
	if err := <-done; err != nil {
		b.Fatal(fmt.Errorf("bare %s: %w: %s", w.argv[0], err, out.String()))
	}
}
