package steps

import (
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

func progress(w io.Writer, n int, r evidence.Result) {
	fmt.Fprint(w, ProgressLine(n, r))
}

// ProgressLine is the line printed when the n-th scenario finishes; the
// CLI's live status line counts verdicts from it. The reason quotes what
// sandboxes sent: redacted and escaped, it stays on this one line.
func ProgressLine(n int, r evidence.Result) string {
	return fmt.Sprintf("  [%2d] %-18s %-13s %-12s %6.1fs  %s\n", n, r.Gate, r.Path, r.Verdict, r.DurationMS/1000, termsafe.Truncate(evidence.Redact(r.Reason), 112))
}
