package steps_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse-dev/gatehouse/features"
	"github.com/gatehouse-dev/gatehouse/internal/lab"
	"github.com/gatehouse-dev/gatehouse/internal/steps"
	"github.com/gatehouse-dev/gatehouse/internal/steps/steptest"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/fake"
)

// The profile loader refuses any {{place:NAME}} or {{secret:NAME}} that
// targets.ProvidedPlaces/ProvidedSecrets lack. That is only right while
// those lists are exactly what a session's spec really carries: a name
// planted here but missing there would be refused at load; a name listed
// there but never planted would pass the load and fail every session start.
func TestSessionsGetExactlyTheProvidedNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: canaries are planted under /run/gatehouse")
	}
	for _, tc := range []struct {
		network string
		lab     steps.Lab
	}{
		{steps.NetLab, &steptest.Lab{CredBroker: lab.NewBroker(lab.BrokerOptions{})}},
		{steps.NetNone, nil},
	} {
		t.Run(tc.network, func(t *testing.T) {
			// A target that records each spec it is asked to start and starts
			// nothing: the scenario then ends early, which is all this test
			// needs.
			var mu sync.Mutex
			var specs []targets.Spec
			tgt := &fake.Target{StartFunc: func(_ context.Context, spec targets.Spec) (targets.Session, error) {
				mu.Lock()
				defer mu.Unlock()
				specs = append(specs, spec)
				return nil, errors.New("recording target: starts nothing")
			}}
			_, _ = steps.Run(context.Background(), steps.Config{
				Target: tgt, Network: tc.network, Lab: tc.lab, ProbePath: "/bin/true",
				Features: features.FS, Gates: []string{"cloud-metadata"}, Settle: 1,
			})
			mu.Lock()
			defer mu.Unlock()
			if len(specs) == 0 {
				t.Fatal("no session was started: nothing to compare")
			}
			hasLab := tc.network != steps.NetNone
			for _, spec := range specs {
				if got, want := keys(spec.Places), names(targets.ProvidedPlaces(), hasLab); got != want {
					t.Errorf("places planted %s, targets.ProvidedPlaces lists %s", got, want)
				}
				if got, want := keys(spec.PlaceIDs), keys(spec.Places); got != want {
					t.Errorf("places with a recorded identity %s, places %s: a target refuses the others", got, want)
				}
				if got, want := keys(spec.Secrets), names(targets.ProvidedSecrets(), hasLab); got != want {
					t.Errorf("secrets planted %s, targets.ProvidedSecrets lists %s", got, want)
				}
			}
		})
	}
}

func names(ps []targets.Provided, hasLab bool) string {
	var out []string
	for _, p := range ps {
		if hasLab || !p.NeedsLab {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func keys[V any](m map[string]V) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
