package probe

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

func TestFillMakesTheBodyThatLong(t *testing.T) {
	for _, tc := range []struct {
		s    wire.Step
		want int
	}{
		{wire.Step{Body: "ghc0123:"}, 8},
		{wire.Step{Body: "ghc0123:", Fill: 1 << 20}, 1 << 20},
		{wire.Step{Body: "ghc0123:", Fill: 3}, 8},
		{wire.Step{Body: "ab", Fill: wire.MaxFill + 10}, wire.MaxFill},
		{wire.Step{Fill: 100}, 0},
	} {
		b := bodyOf(tc.s)
		if len(b) != tc.want || (tc.s.Body != "" && !strings.HasPrefix(b, tc.s.Body)) {
			t.Errorf("fill %d of %q: %d bytes, want %d", tc.s.Fill, tc.s.Body, len(b), tc.want)
		}
	}
}
