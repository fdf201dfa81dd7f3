package monitor_test

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
	"github.com/gatehouse-dev/gatehouse/internal/monitor"
)

// BenchmarkDetectionLatency: a child in a registered cgroup connects to
// 203.0.113.10 on a new port every 2 ms; latency is when the event was
// received minus the child's clock reading just before connect (wall
// clocks of one machine). Reports p50/p95/max.
func BenchmarkDetectionLatency(b *testing.B) {
	m := startMonitor(b, monitor.Options{All: true})
	cg := newCgroup(b)
	if err := m.Register(cg.id); err != nil {
		b.Fatal(err)
	}
	c := collect(m)
	n := max(b.N, 20)
	b.ResetTimer()
	marks, _ := runChild(b, "connects", cg, "GH_MONITOR_N="+strconv.Itoa(n))
	b.StopTimer()
	byObject := map[string]time.Time{}
	for label, t := range marks {
		i, _ := strconv.Atoi(label)
		byObject["203.0.113.10:"+strconv.Itoa(1024+i%60000)] = t
	}
	evs := c.waitFor(5*time.Second, func(evs []detect.Event) bool { return len(evs) >= n })
	var lat []time.Duration
	for _, e := range evs {
		if t, ok := byObject[e.Object]; ok && e.Key.CgroupID == cg.id && e.Kind == detect.KindConnect {
			lat = append(lat, e.Received.Sub(t))
			delete(byObject, e.Object)
		}
	}
	if len(lat) < n {
		b.Fatalf("%d of %d connects detected (%d dropped)", len(lat), n, m.Dropped())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.95), "p95-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

// BenchmarkEventsPerSecond: a child opens an absent path b.N times as fast
// as it can; reports the events received per second of the child's run and
// how many were dropped (ring full or channel full).
func BenchmarkEventsPerSecond(b *testing.B) {
	m := startMonitor(b, monitor.Options{All: true, RingBytes: 8 << 20, Buffer: 1 << 18})
	cg := newCgroup(b)
	if err := m.Register(cg.id); err != nil {
		b.Fatal(err)
	}
	c := collect(m)
	n := max(b.N, 1000)
	b.ResetTimer()
	marks, _ := runChild(b, "opens", cg, "GH_MONITOR_N="+strconv.Itoa(n))
	b.StopTimer()
	count := func(evs []detect.Event) (int, time.Time) {
		k, last := 0, time.Time{}
		for _, e := range evs {
			if e.Key.CgroupID == cg.id && e.Object == "/gh-monitor-bench-absent" {
				k++
				last = e.Received
			}
		}
		return k, last
	}
	evs := c.waitFor(10*time.Second, func(evs []detect.Event) bool { k, _ := count(evs); return uint64(k)+m.Dropped() >= uint64(n) })
	got, last := count(evs)
	span := last.Sub(marks["start"])
	if got == 0 || span <= 0 {
		b.Fatalf("no events (%d dropped)", m.Dropped())
	}
	b.ReportMetric(float64(got)/span.Seconds(), "events/s")
	b.ReportMetric(float64(m.Dropped()), "dropped")
	b.ReportMetric(float64(got)/float64(n)*100, "%received")
}
