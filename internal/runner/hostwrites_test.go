package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// The run's output says what was taken back and, plainly, what was left,
// naming the first leftovers; nothing at all when the probe wrote nothing
// on the host.
func TestReportHostWrites(t *testing.T) {
	var b bytes.Buffer
	ReportHostWrites(&b, &evidence.HostWrites{})
	ReportHostWrites(&b, nil)
	if b.Len() != 0 {
		t.Errorf("output with nothing written on the host: %q", b.String())
	}
	left := make([]string, 12)
	for i := range left {
		left[i] = fmt.Sprintf("/tmp/gatehouse-state-%d: left on the host", i)
	}
	ReportHostWrites(&b, &evidence.HostWrites{Removed: 3, Left: 12, LeftPaths: left})
	out := b.String()
	for _, want := range []string{"3 place(s) taken back", "LEFT ON THE HOST: 12 place(s)", "/tmp/gatehouse-state-0:", "and 2 more in run.json host_writes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gatehouse-state-10") {
		t.Errorf("more than %d leftovers named in the output:\n%s", shownLeft, out)
	}
}
