package lab_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

func benchNeedLab(b *testing.B) {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		b.Skip("needs iproute2")
	}
}

// BenchmarkLabUp measures bringing the lab up (namespace, addresses, every
// endpoint, the seal check) and down again.
func BenchmarkLabUp(b *testing.B) {
	benchNeedLab(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		l, err := lab.Up(ctx, lab.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAttach measures joining one session namespace to a running lab
// (veth pair, addresses, routes, seal check) and removing it; attach-ms
// and detach-ms split the two.
func BenchmarkAttach(b *testing.B) {
	benchNeedLab(b)
	ctx := context.Background()
	l, err := lab.Up(ctx, lab.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	var attach, detach time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("b%d", i)
		t0 := time.Now()
		if _, err := l.Attach(ctx, name); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := l.Detach(ctx, name); err != nil {
			b.Fatal(err)
		}
		attach, detach = attach+t1.Sub(t0), detach+time.Since(t1)
	}
	b.ReportMetric(float64(attach.Microseconds())/1000/float64(b.N), "attach-ms")
	b.ReportMetric(float64(detach.Microseconds())/1000/float64(b.N), "detach-ms")
}

// BenchmarkEmitted measures one reading of a session's accounting counters
// (what a "settle early" poll costs).
func BenchmarkEmitted(b *testing.B) {
	benchNeedLab(b)
	ctx := context.Background()
	l, err := lab.Up(ctx, lab.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Attach(ctx, "e"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := l.Emitted(ctx, "e")
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := got["callback4"]; !ok {
			b.Fatalf("no callback4 counter: %v", got)
		}
	}
}
