package bwrap_test

import (
	"context"
	"fmt"
	"io"
	osexec "os/exec"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/lab"
	"github.com/gatehouse-dev/gatehouse/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/targets/profile"
)

// BenchmarkSessionStart measures one hardened bubblewrap session from Start
// through a first command to Stop, in a namespace with only lo.
func BenchmarkSessionStart(b *testing.B) {
	benchNeed(b)
	p := benchProfile(b, "bwrap-hardened.yaml")
	nw := benchNetns(b)
	ctx := context.Background()
	tgt := bwrap.New(bwrap.Options{Profile: p, Root: b.TempDir(), Init: probetest.Build(b)})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchSession(b, ctx, tgt, p, nw)
	}
}

// BenchmarkBareVsSession puts a Gatehouse session next to bubblewrap's own
// cold start, in one run so the ratio compares like with like on a busy
// machine. Each iteration, in a running lab:
//
//   - attach: the lab's Attach of a fresh session namespace (and, apart,
//     its Detach), as a run does for every session;
//   - session: Start + Exec /bin/true + Stop of bwrap-hardened in it;
//   - bare: the same bubblewrap argv the target built (read back through
//     Inspect from a session kept open for the purpose, so its staging
//     folder exists), with /bin/true as the command instead of the init,
//     started by hand from a thread in one namespace the lab attached once.
//
// It reports medians: bare-ms, session-ms, attach-ms, detach-ms and the
// ratio session/bare (issue 15 aims: session ≤ 2× bare, attach ≤ 10 ms).
func BenchmarkBareVsSession(b *testing.B) {
	benchNeed(b)
	p := benchProfile(b, "bwrap-hardened.yaml")
	ctx := context.Background()
	l, err := lab.Up(ctx, lab.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(context.Background()) })
	prepared, err := l.Attach(ctx, "bare")
	if err != nil {
		b.Fatal(err)
	}
	tgt := bwrap.New(bwrap.Options{Profile: p, Root: b.TempDir(), Init: probetest.Build(b)})

	// The template session: its argv is the bare command's, its staging
	// folder what that argv binds. It idles for the whole benchmark.
	tmpl, err := tgt.Start(ctx, withPlaces(b, p, targets.Spec{Name: "bare", Path: targets.PathNormal, Network: prepared}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tmpl.Stop(context.Background()) })
	cfg, err := tmpl.Inspect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	argv := bareArgv(b, p, cfg.Argv)
	b.Logf("bare argv: %q", argv)

	// One of each first, untimed: binaries and libraries in the page cache.
	runBare(b, prepared.NetnsPath, argv)
	warm, err := l.Attach(ctx, "warm")
	if err != nil {
		b.Fatal(err)
	}
	benchSession(b, ctx, tgt, p, warm)
	if err := l.Detach(ctx, "warm"); err != nil {
		b.Fatal(err)
	}

	var bare, session, attach, detach []time.Duration
	phases = map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("s%d", i)
		t0 := time.Now()
		nw, err := l.Attach(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		benchSession(b, ctx, tgt, p, nw)
		t2 := time.Now()
		if err := l.Detach(ctx, name); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		runBare(b, prepared.NetnsPath, argv)
		t4 := time.Now()
		attach = append(attach, t1.Sub(t0))
		session = append(session, t2.Sub(t1))
		detach = append(detach, t3.Sub(t2))
		bare = append(bare, t4.Sub(t3))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(median(bare)), "bare-ms")
	b.ReportMetric(ms(median(session)), "session-ms")
	b.ReportMetric(ms(median(attach)), "attach-ms")
	b.ReportMetric(ms(median(detach)), "detach-ms")
	b.ReportMetric(float64(median(session))/float64(median(bare)), "session/bare")
	for _, ph := range []string{"start", "exec", "stop"} {
		b.ReportMetric(ms(median(phases[ph])), ph+"-ms")
	}
}

// phases are the session's Start, Exec and Stop times, per round.
var phases map[string][]time.Duration

func benchSession(b *testing.B, ctx context.Context, tgt *bwrap.Target, p *profile.Profile, nw targets.Network) {
	b.Helper()
	t0 := time.Now()
	s, err := tgt.Start(ctx, withPlaces(b, p, targets.Spec{Name: "bench", Path: targets.PathNormal, Network: nw}))
	if err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	res, err := s.Exec(ctx, targets.Command{Args: []string{"/bin/true"}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("exec: %v %+v", err, res)
	}
	t2 := time.Now()
	if err := s.Stop(ctx); err != nil {
		b.Fatal(err)
	}
	if phases != nil {
		phases["start"] = append(phases["start"], t1.Sub(t0))
		phases["exec"] = append(phases["exec"], t2.Sub(t1))
		phases["stop"] = append(phases["stop"], time.Since(t2))
	}
}

// bareArgv turns the session's recorded argv (nsenter --net=NS bwrap ...
// --) into bubblewrap alone running /bin/true: the namespace is joined by
// the caller, as someone running bubblewrap by hand in it would.
func bareArgv(b *testing.B, p *profile.Profile, rec []string) []string {
	b.Helper()
	if len(rec) < 3 || rec[0] != "nsenter" || !strings.HasPrefix(rec[1], "--net=") || rec[len(rec)-1] != "--" {
		b.Fatalf("unexpected session argv shape: %q", rec)
	}
	for _, a := range p.Bwrap.Args {
		if profile.FDOption(a) {
			// Its descriptor is the target's to open; not needed for the
			// shipped hardened profile.
			b.Skipf("profile passes a file by descriptor (%s): the bare command would need it open", a)
		}
	}
	return append(append([]string(nil), rec[2:]...), "/bin/true")
}

// runBare starts argv from a locked thread in the namespace at netns and
// waits for it.
func runBare(b *testing.B, netns string, argv []string) {
	b.Helper()
	done := make(chan error, 1)
	var out strings.Builder
	go func() {
		// Never unlocked: the thread ends with the goroutine, namespace and all.
		runtime.LockOSThread()
		fd, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			done <- err
			return
		}
		cmd := osexec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		done <- cmd.Run()
	}()
	if err := <-done; err != nil {
		b.Fatalf("bare bwrap: %v: %s", err, out.String())
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
