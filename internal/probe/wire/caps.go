package wire

// Field caps shared by the probe (which clips) and Decode (which rejects).
const (
	MaxErrorLen   = 512 // bytes of Report.Error
	MaxExcerptLen = 512 // bytes of Report.Excerpt
	// MaxFindingsLen is the Excerpt cap of searches and host checks, whose
	// excerpt is a list of findings (values, credential hashes, mounts,
	// engines). With a 4 KiB target and every byte escaped, a report line
	// stays under Decode's 64 KiB line limit.
	MaxFindingsLen = 4096
)

// ExcerptCap is the Excerpt cap of a report of kind.
func ExcerptCap(kind string) int {
	switch kind {
	case KindFind, KindHunt, KindHostCheck, KindTakedown:
		return MaxFindingsLen
	}
	return MaxExcerptLen
}

// Caps of Report.Wrote: with the other fields at their caps and every
// byte escaped, a report line stays under Decode's line limit.
const (
	MaxWrote      = 64   // paths a report lists
	MaxWroteBytes = 4096 // bytes of all of them together
)

// wroteKinds are the kinds whose reports may list paths written.
var wroteKinds = map[string]bool{KindStash: true, KindSend: true, KindReceive: true, KindWrite: true}

// Caps of Report.Dialed: a dialer tries each address of an answer in turn
// (and one family racing the other), so a few suffice.
const (
	MaxDialed    = 8  // addresses a report lists
	MaxDialedLen = 64 // bytes of one ("[v6 address%zone]:port")
)
