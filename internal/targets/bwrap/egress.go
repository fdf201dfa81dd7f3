package bwrap

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/internal/targets/egress"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// applyEgress loads the profile's ruleset in the session namespace through
// the shared egress package, so a policy file means the same for every
// target; a ruleset that did not take fails Start.
func applyEgress(ctx context.Context, netns string, p *profile.Profile) (*egress.Applied, error) {
	data, err := p.EgressRules()
	if err != nil {
		return nil, err
	}
	return egress.Apply(ctx, netns, p.Egress, data)
}
