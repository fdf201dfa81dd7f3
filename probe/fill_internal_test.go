package probe

import (
	"strings"
	"testing"
)

func TestFillMakesTheBodyThatLong(t *testing.T) {
	for _, tc := range []struct {
		s    Step
		want int
	}{
		{Step{Body: "ghc0123:"}, 8},
		{Step{Body: "ghc0123:", Fill: 1 << 20}, 1 << 20},
		{Step{Body: "ghc0123:", Fill: 3}, 8},
		{Step{Body: "ab", Fill: MaxFill + 10}, MaxFill},
		{Step{Fill: 100}, 0},
	} {
		b := tc.s.body()
		if len(b) != tc.want || (tc.s.Body != "" && !strings.HasPrefix(b, tc.s.Body)) {
			t.Errorf("fill %d of %q: %d bytes, want %d", tc.s.Fill, tc.s.Body, len(b), tc.want)
		}
	}
}
