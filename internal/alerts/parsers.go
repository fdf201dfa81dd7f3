package alerts

import (
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// Parser turns one unit of a format (a JSON line, a POST body, an audit
// group) into Events. Every parser keeps the input as Raw.
type Parser func(raw []byte, received time.Time) ([]detect.Event, error)

// ErrUnknownFormat is returned for a format this package does not read.
var ErrUnknownFormat = fmt.Errorf("unknown alert format (want %s, %s, %s or %s)", FormatFalco, FormatTetragon, FormatAudit, FormatOCSF)

// ParserFor returns the parser of a format name.
func ParserFor(format string) (Parser, error) {
	switch format {
	case FormatFalco:
		return ParseFalco, nil
	case FormatTetragon:
		return ParseTetragon, nil
	case FormatAudit:
		return ParseAudit, nil
	case FormatOCSF:
		return ParseOCSF, nil
	}
	return nil, fmt.Errorf("%q: %w", format, ErrUnknownFormat)
}

// RuleUnparsed names the Event that keeps, as evidence, input a source
// received but could not parse; its Kind is "" so it matches nothing.
const RuleUnparsed = "(unparsed)"

func unparsed(source string, raw []byte, received time.Time, imported bool) detect.Event {
	return detect.Event{Source: source, Rule: RuleUnparsed, Received: received, Imported: imported, Raw: raw}
}
