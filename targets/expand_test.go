package targets_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/targets"
)

func TestExpand(t *testing.T) {
	spec := targets.Spec{
		Places:  map[string]string{"home": "/run/gh/s1/home"},
		Secrets: map[string]string{"aws": "GHCANARYx"},
	}
	tests := []struct {
		in, want, err string
	}{
		{"--bind", "--bind", ""},
		{"{{place:home}}", "/run/gh/s1/home", ""},
		{"{{place:home}}/.aws", "/run/gh/s1/home/.aws", ""},
		{"key={{secret:aws}};again={{secret:aws}}", "key=GHCANARYx;again=GHCANARYx", ""},
		{"{{place:nope}}", "", `no place named "nope" (it has: home)`},
		{"{{secret:home}}", "", `no secret named "home"`},
		{"{{env:HOME}}", "", "unknown reference"},
		{"{{place:home", "", "unclosed"},
	}
	for _, tt := range tests {
		got, err := targets.Expand(tt.in, spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
