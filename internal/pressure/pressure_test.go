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
	useFiles(t, dir)
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

// useFiles points the package at test files in dir (none exist yet).
func useFiles(t *testing.T, dir string) {
	c, i, m := cpuFile, ioFile, memoryFile
	cpuFile, ioFile, memoryFile = filepath.Join(dir, "cpu"), filepath.Join(dir, "io"), filepath.Join(dir, "memory")
	t.Cleanup(func() { cpuFile, ioFile, memoryFile = c, i, m })
}

// Under a neighbour's disk load, removing a container waits on I/O while
// CPU pressure stays low: the stall is the longest of the three waits
// (issue 22, C5), and a resource the kernel does not tell adds nothing.
func TestSinceTakesTheLongestWait(t *testing.T) {
	tests := []struct {
		name         string
		cpu, io, mem [2]string // totals in µs before and after; "" = no file
		want         time.Duration
		ok           bool
	}{
		{"cpu only", [2]string{"0", "1000000"}, [2]string{"", ""}, [2]string{"", ""}, time.Second, true},
		{"io waits longest", [2]string{"0", "200000"}, [2]string{"5000000", "9000000"}, [2]string{"0", "0"}, 4 * time.Second, true},
		{"memory waits longest", [2]string{"0", "200000"}, [2]string{"0", "100000"}, [2]string{"0", "3000000"}, 3 * time.Second, true},
		{"io gone between readings adds nothing", [2]string{"0", "200000"}, [2]string{"0", ""}, [2]string{"", ""}, 200 * time.Millisecond, true},
		{"io going backwards adds nothing", [2]string{"0", "200000"}, [2]string{"900000", "0"}, [2]string{"", ""}, 200 * time.Millisecond, true},
		{"no cpu file: nothing known", [2]string{"", ""}, [2]string{"0", "9000000"}, [2]string{"", ""}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			useFiles(t, dir)
			put := func(file, total string) {
				os.Remove(file)
				if total != "" {
					if err := os.WriteFile(file, []byte("some avg10=0 avg60=0 avg300=0 total="+total+"\nfull avg10=0 avg60=0 avg300=0 total=0\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			read := func(i int) Mark {
				put(cpuFile, tt.cpu[i])
				put(ioFile, tt.io[i])
				put(memoryFile, tt.mem[i])
				return Now()
			}
			a := read(0)
			b := read(1)
			got, _, ok := b.Since(a)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Since = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestParseAvg10(t *testing.T) {
	for in, want := range map[string]float64{
		"some avg10=37.50 avg60=1.00 avg300=0.00 total=5\nfull avg10=99.00 avg60=0 avg300=0 total=1\n": 37.5,
		"some avg60=1.00 total=5\n":  0,
		"some avg10=x total=5\n":     0,
		"some avg10=180.0 total=5\n": 0,
		"full avg10=50.00 total=5\n": 0,
	} {
		if got := parseAvg10([]byte(in)); got != want {
			t.Errorf("parseAvg10(%q) = %v, want %v", in, got, want)
		}
	}
}
