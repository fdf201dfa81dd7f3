package bwrap_test

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/probe/probetest"
	"github.com/gatehouse-dev/gatehouse/internal/targets/bwrap"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
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
	tmpl, err := tgt.Start(ctx, withPlaces(b, p, targets.Spec{Name: "bare", Path: targets.PathNormal, Network: targets.Network(prepared)}))
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
	bw := bareWhere(b, cfg.Facts)

	// One of each first, untimed: binaries and libraries in the page cache.
	runBare(b, prepared.NetnsPath, bw, argv)
	warm, err := l.Attach(ctx, "warm")
	if err != nil {
		b.Fatal(err)
	}
	benchSession(b, ctx, tgt, p, targets.Network(warm))
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
		benchSession(b, ctx, tgt, p, targets.Network(nw))
		t2 := time.Now()
		if err := l.Detach(ctx, name); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		runBare(b, prepared.NetnsPath, bw, argv)
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

// bareArgv turns the session's recorded argv (bwrap ... --) into
// bubblewrap alone running /bin/true: the namespaces are joined by the
// caller, as someone running bubblewrap by hand in them would.
func bareArgv(b *testing.B, p *profile.Profile, rec []string) []string {
	b.Helper()
	if len(rec) < 2 || rec[len(rec)-1] != "--" {
		b.Fatalf("unexpected session argv shape: %q", rec)
	}
	for _, a := range bwrap.SectionOf(p).Args {
		if bwrap.FDOption(a) {
			// Its descriptor is the target's to open; not needed for the
			// shipped hardened profile.
			b.Skipf("profile passes a file by descriptor (%s): the bare command would need it open", a)
		}
	}
	return append(append([]string(nil), rec...), "/bin/true")
}

// bare is where and as whom the bare bubblewrap runs: the template
// session's bubblewrap's own mount namespace (its doors are there) and
// host uid.
type bare struct {
	mntns string
	uid   int
}

// bareWhere finds the template session's outer bubblewrap (the init's
// nearest ancestor that bubblewrap did not start) from its facts.
func bareWhere(b *testing.B, facts map[string]string) bare {
	b.Helper()
	pid, _ := strconv.Atoi(facts["outside.pid"])
	uid, err := strconv.Atoi(facts["outside.uid"])
	if pid == 0 || err != nil {
		b.Fatalf("the template session names no init or uid: %v", facts)
	}
	for i := 0; i < 8 && pid > 1; i++ {
		pp := parentPID(pid)
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pp) + "/exe")
		if filepath.Base(exe) != "bwrap" {
			return bare{mntns: "/proc/" + strconv.Itoa(pid) + "/ns/mnt", uid: uid}
		}
		pid = pp
	}
	b.Fatal("no outer bubblewrap above the template's init")
	return bare{}
}

func parentPID(pid int) int {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// runBare starts argv from a locked thread in the namespace at netns and
// the mount namespace of w, as w's uid, and waits for it.
func runBare(b *testing.B, netns string, w bare, argv []string) {
	b.Helper()
	done := make(chan error, 1)
	var out strings.Builder
	go func() {
		// Never unlocked: the thread ends with the goroutine, namespaces and all.
		runtime.LockOSThread()
		err := unix.Unshare(unix.CLONE_FS) // setns(mnt) needs a thread of its own
		for _, ns := range []struct {
			path string
			kind int
		}{{netns, unix.CLONE_NEWNET}, {w.mntns, unix.CLONE_NEWNS}} {
			if err != nil {
				break
			}
			var fd int
			if fd, err = unix.Open(ns.path, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				err = unix.Setns(fd, ns.kind)
				unix.Close(fd)
			}
		}
		if err != nil {
			done <- err
			return
		}
		cmd := osexec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		cmd.Dir = "/"
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if w.uid != 0 {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid), Groups: []uint32{}}
		}
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
