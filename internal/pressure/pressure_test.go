package pressure

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseSome(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"some avg10=5.89 avg60=11.20 avg300=14.18 total=99782716\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 99782716 * time.Microsecond, true},
		{"full avg10=0.00 total=5\n", 0, false},
		{"some avg10=1.00 total=x\n", 0, false},
		{"some avg10=1.00 total=-4\n", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSome([]byte(tt.in))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSome(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestSince(t *testing.T) {
	dir := t.TempDir()
	cpuFile = filepath.Join(dir, "cpu")
	t.Cleanup(func() { cpuFile = "/proc/pressure/cpu" })
	put := func(total string) {
		if err := os.WriteFile(cpuFile, []byte("some avg10=0 avg60=0 avg300=0 total="+total+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put("1000000")
	a := Now()
	put("3500000")
	b := Now()
	stall, _, ok := b.Since(a)
	if !ok || stall != 2500*time.Millisecond {
		t.Errorf("stall %v ok %v; want 2.5s", stall, ok)
	}
	os.Remove(cpuFile)
	c := Now()
	if c.Known() {
		t.Error("a missing file is known")
	}
	if _, _, ok := c.Since(a); ok {
		t.Error("a stall against an unknown mark is known")
	}
}
