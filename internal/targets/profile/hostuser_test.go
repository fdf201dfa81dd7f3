package profile_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
	"github.com/gatehouse-dev/gatehouse/targets/profiles"
)

// The plan says, for each path, who the sandbox's user is on the host,
// not only inside: bubblewrap's "uid 1000" is the run's own unprivileged
// uid on the normal path and host root on the assume-breach path; a
// wrapper's is the profile's uid itself.
func TestPlanSaysTheHostUser(t *testing.T) {
	for _, tc := range []struct {
		profile string
		path    targets.Path
		kind    string
		uid     int // -1: allocated at run time
		text    string
	}{
		{profiles.Hardened, targets.PathNormal, profile.HostRunUser, -1, "unprivileged host uid"},
		{profiles.Hardened, targets.PathBreach, profile.HostRoot, 0, "host root"},
		{profiles.Leaky, targets.PathNormal, profile.HostRunUser, -1, "unprivileged host uid"},
		{profiles.FirejailHardened, targets.PathNormal, profile.HostProfile, 1000, "host uid 1000"},
		{profiles.FirejailHardened, targets.PathBreach, profile.HostRoot, 0, "host root"},
	} {
		t.Run(tc.profile+"/"+string(tc.path), func(t *testing.T) {
			p, err := kinds.LoadFS(profiles.FS, tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			pl := profile.NewPlan(p, []string{"host-access"}, false)
			var pp *profile.PathPlan
			for i := range pl.Paths {
				if pl.Paths[i].Path == string(tc.path) {
					pp = &pl.Paths[i]
				}
			}
			if pp == nil {
				t.Fatalf("no %s path in the plan", tc.path)
			}
			h := pp.HostUser
			if h.Kind != tc.kind || !strings.Contains(h.Text, tc.text) || (tc.uid < 0) != (h.UID == nil) || (h.UID != nil && *h.UID != tc.uid) {
				t.Fatalf("host user %+v (uid %v), want kind %s, uid %d, text with %q", h, h.UID, tc.kind, tc.uid, tc.text)
			}
			var b bytes.Buffer
			if err := pl.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "on the host: "+h.Text) {
				t.Fatalf("plan text lacks the host user:\n%s", b.String())
			}
		})
	}
}
