// Package alerts reads what other monitors say: Falco JSON (file_output,
// http_output, falcosidekick and its CloudEvents), Tetragon JSON lines,
// auditd log lines and OCSF Detection Findings. Each alert becomes a
// detect.Event whose Kind and Object are normalised exactly as Gatehouse's
// own monitor writes them, so one matching rule (detect.Match) serves all
// sources. An alert that says nothing matching can use still becomes an
// Event (Kind "") so its raw bytes stay in the evidence; only input that is
// not in the format at all is an error.
//
// Sources: Tail follows a file from its end, Import reads one after the
// fact (Events marked Imported: detected yes/no, latency not measured),
// Listen receives POSTs on a loopback address.
package alerts

import (
	"errors"
	"fmt"
)

// Format names, as the --alerts spec and detect.Event.Source spell them.
const (
	FormatFalco    = "falco"
	FormatTetragon = "tetragon"
	FormatAudit    = "audit"
	FormatOCSF     = "ocsf"
)

// ErrMalformed is wrapped by every parser error: the input is not in the
// format (not JSON, not an audit record, a field of the wrong type).
var ErrMalformed = errors.New("malformed alert")

func malformed(format, what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w: %s: %v", format, ErrMalformed, what, err)
	}
	return fmt.Errorf("%s: %w: %s", format, ErrMalformed, what)
}
