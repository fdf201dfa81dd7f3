package targettest

import (
	"os"
	"strconv"
	"testing"
)

// lowPIDBefore gives a run of pids that all sort before the init's, also
// when the init's pid leaves only one short run (10022: 10000-10021).
func TestLowPIDBefore(t *testing.T) {
	for _, tc := range []struct {
		init   string
		mustOK bool
	}{{"30000", true}, {"5000", true}, {"10022", false}} {
		last, ok := lowPIDBefore(tc.init)
		if !ok {
			if tc.mustOK {
				t.Errorf("init %s: no run found", tc.init)
			}
			continue
		}
		for p := last + 1; p <= last+12; p++ {
			if strconv.Itoa(p) >= tc.init {
				t.Errorf("init %s: run from %d holds %d, which does not sort before it", tc.init, last+1, p)
			}
		}
	}
	last, ok := lowPIDBefore("10022")
	if ok && (last < 9999 || last > 10009) {
		t.Errorf("init 10022: run from %d; the only run of 12 sorting before it is in 10000-10021", last+1)
	}
	free := true
	for p := 10000; p <= 10021; p++ {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p)); err == nil {
			free = false
		}
	}
	if free && !ok {
		t.Error("init 10022: 10000-10021 are free, yet no run was found (the CI failure)")
	}
}
