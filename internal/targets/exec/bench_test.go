package exec_test

import (
	"context"
	"io"
	osexec "os/exec"
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// BenchmarkSessionStart measures one firejail-hardened session from Start
// through a first command to Stop, in a namespace with only lo.
func BenchmarkSessionStart(b *testing.B) {
	needRoot(b)
	needFirejail(b)
	p := shipped(b, profiles.FirejailHardened)
	nw := newNetns(b)
	ctx := context.Background()
	tgt := newTarget(b, p)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
}

// BenchmarkBareFirejail is firejail's own start with the same options
// (`firejail ARGS -- true`, as root, in the same kind of namespace): the
// baseline the session start above is read against.
func BenchmarkBareFirejail(b *testing.B) {
	needRoot(b)
	needFirejail(b)
	p := shipped(b, profiles.FirejailHardened)
	nw := newNetns(b)
	argv := append([]string{"nsenter", "--net=" + nw.NetnsPath}, p.Wrapper().Argv...)
	argv = append(argv, "/bin/true")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := osexec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
