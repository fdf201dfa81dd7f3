package profile_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// A wrapper's sandbox user is the profile's uid on the host: when that uid
// is a real account of the machine, the plan says so; when it is no one's,
// or only a system account's, it says nothing.
func TestPlanWarnsWhenTheSandboxUserIsAnAccount(t *testing.T) {
	yaml := strings.Replace(dockerBase, "{uid: 0, gid: 0}", "{uid: 1001, gid: 0}", 1) + "target: firejail\nfirejail: {args: [--private-tmp]}\n"
	p, err := kinds.Load(writeProfile(t, yaml, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func(int) (profile.Account, bool)) { profile.LookupAccount = f }(profile.LookupAccount)
	for _, tc := range []struct {
		name    string
		account map[int]profile.Account
		want    []string // substrings of the warnings, "" none
	}{
		{"no account", nil, nil},
		{"a system account", map[int]profile.Account{1000: {Name: "svc", Home: "/nonexistent", Shell: "/usr/sbin/nologin"}}, nil},
		{"a person's account", map[int]profile.Account{1000: {Name: "dev", Home: "/home/dev", HomeExists: true, Shell: "/bin/bash", Processes: 3}},
			[]string{`paths.normal.uid: the normal path's sandbox user is host uid 1000, this machine's account "dev" (login shell /bin/bash, home /home/dev, 3 process(es) running)`}},
		{"both paths", map[int]profile.Account{1000: {Name: "dev", Shell: "/bin/sh"}, 1001: {Name: "ops", Processes: 1}},
			[]string{`account "dev" (login shell /bin/sh)`, `paths.assume-breach.uid: the assume-breach path's sandbox user is host uid 1001, this machine's account "ops" (1 process(es) running)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			profile.LookupAccount = func(uid int) (profile.Account, bool) { a, ok := tc.account[uid]; return a, ok }
			var got []string
			for _, w := range profile.NewPlan(p, nil, true).Warnings {
				if strings.Contains(w.Field, ".uid") {
					got = append(got, w.String())
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q lacks %q", got[i], w)
				}
			}
		})
	}
}
