package evidence

import (
	"regexp"
	"strings"
)

// secretRE matches every value Gatehouse plants or hands out: lab and
// planted credentials (GHCANARY-<kind>-<hex>), session canaries (ghc<hex>),
// host nonces (ghhost<hex>). Control tokens (ghctl...) are not secrets.
var secretRE = regexp.MustCompile(`(?i)GHCANARY[-A-Za-z0-9_]*|\bghc[0-9a-f]{16}\b|ghhost[0-9a-f]{16}`)

// Redact makes evidence text safe to print: secrets become <canary> (the
// traces keep them) and control characters from hostile input become spaces.
func Redact(s string) string {
	s = secretRE.ReplaceAllString(s, "<canary>")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
