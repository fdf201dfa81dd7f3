package evidence

import (
	"github.com/gatehouse-dev/gatehouse/internal/minted"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// Redact makes text from evidence safe to print on one line: every value
// the harness made (canaries, host nonces, planted credentials, broker and
// intake tokens, model keys; see internal/minted) becomes <kind> (the
// traces keep them), and every character that could act on a terminal or
// disguise text is shown as a visible escape (see internal/termsafe).
// Control tokens (ghctl...) are not secrets and are kept.
func Redact(s string) string {
	return termsafe.Escape(minted.Redact(s))
}
