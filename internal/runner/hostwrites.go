package runner

import (
	"fmt"
	"io"
	"strings"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// shownLeft bounds the leftovers named in the run's output; run.json
// names more.
const shownLeft = 10

// ReportHostWrites says, in the run's output, what the probe wrote on the
// host through the sandbox and what could not be taken back. A leftover
// changes no verdict (the gates judge the sandbox) and no exit code, but
// the run says it plainly: it is on this machine now.
func ReportHostWrites(w io.Writer, hw *evidence.HostWrites) {
	if hw == nil || hw.Removed+hw.Left == 0 {
		return
	}
	if hw.Removed > 0 {
		fmt.Fprintf(w, "the probe wrote on the host itself through the sandbox: %d place(s) taken back after the run (run.json host_writes)\n", hw.Removed)
	}
	if hw.Left == 0 {
		return
	}
	shown := hw.LeftPaths
	if len(shown) > shownLeft {
		shown = shown[:shownLeft]
	}
	more := ""
	if hw.Left > len(shown) {
		more = fmt.Sprintf("; and %d more in run.json host_writes", hw.Left-len(shown))
	}
	fmt.Fprintf(w, "LEFT ON THE HOST: %d place(s) the probe wrote through the sandbox could not be taken back (`gatehouse lab down` tries again): %s%s\n",
		hw.Left, evidence.Redact(strings.Join(shown, "; ")), more)
}
