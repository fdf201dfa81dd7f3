package diff_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/evidence/diff"
)

// side builds a run whose effective config on the normal path has the given
// capability and ruleset, with per-run noise that must never show up.
func side(profile, capEff, rules, netns string, verdict evidence.Verdict, policy map[string]string) diff.Side {
	facts := map[string]any{"cap_eff": capEff, "nft_ruleset": rules, "uid": "1000",
		"ns.net": "net:[" + netns + "]", "netns": "/run/netns/gh-" + netns + "-s1",
		"addrs": "gh" + netns + "s1p 198.51.100.6/30,lo 127.0.0.1/8"}
	s := diff.Side{
		Run: evidence.Run{ID: "run-" + profile, Profile: profile, ProfileFile: "profiles/" + profile + ".yaml",
			PolicyDigest: "sha256:" + profile,
			Effective: map[string]any{"normal": map[string]any{"runtime": "bubblewrap 0.8.0", "facts": facts,
				"mounts": []any{"/usr ext4 ro", "/tmp tmpfs rw"},
				"argv": []any{"nsenter", "--net=/run/netns/gh-" + netns + "-s1", "bwrap", "--setenv", "GATEHOUSE_CANARY", "ghc" + strings.Repeat(netns[:1], 16),
					"--ro-bind", "/run/gatehouse/scratch/gatehouse-bwrap-gh-" + netns + "-s1-" + netns + "-12345/fs", "/gatehouse"}}}},
		Results: []evidence.Result{
			{Gate: "external-callback", Scenario: "call home", Path: "normal", Verdict: verdict, DurationMS: 1000},
			{Gate: "dns-exfiltration", Scenario: "dns", Path: "normal", Verdict: evidence.Pass, DurationMS: 500},
		},
		Policy: map[string][]byte{},
	}
	for name, body := range policy {
		s.Policy[name] = []byte(body)
	}
	return s
}

func TestCompare(t *testing.T) {
	hardened := side("hardened", "0000000000000000", "table inet x {\n  policy drop;\n}", "aaaa", evidence.Pass,
		map[string]string{"hardened.yaml": "name: hardened\negress: hardened.nft\n", "hardened.nft": "policy drop\n"})
	hardened2 := side("hardened", "0000000000000000", "table inet x {\n  policy drop;\n}", "bbbb", evidence.Pass,
		map[string]string{"hardened.yaml": "name: hardened\negress: hardened.nft\n", "hardened.nft": "policy drop\n"})
	leaky := side("leaky", "000001fffeffffff", "", "cccc", evidence.Fail,
		map[string]string{"leaky.yaml": "name: leaky\n"})

	tests := []struct {
		name       string
		a, b       diff.Side
		regressed  bool
		changes    []string // "section/key" expected among the changes
		mustNotSee []string // text that must not be in any change
	}{
		{name: "same config, other run: only noise differs, so nothing is reported",
			a: hardened, b: hardened2, mustNotSee: []string{"net:[", "gh-", "ghc", "<veth>"}},
		{name: "hardened to leaky: regression with capability, rules and policy changes",
			a: hardened, b: leaky, regressed: true,
			changes: []string{"run/what was tested", "effective normal/capabilities", "effective normal/network rules",
				"policy/digest", "policy/profile hardened.yaml -> leaky.yaml", "policy/hardened.nft (only in A)"}},
		{name: "leaky to hardened is an improvement, not a regression", a: leaky, b: hardened,
			changes: []string{"policy/hardened.nft (only in B)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := diff.Compare(tt.a, tt.b)
			if r.Regressed() != tt.regressed {
				t.Errorf("Regressed() = %v, want %v", r.Regressed(), tt.regressed)
			}
			got := map[string]string{}
			for _, c := range r.Changes {
				got[c.Section+"/"+c.Key] = c.Diff
			}
			if len(tt.changes) == 0 && len(r.Changes) > 0 {
				t.Errorf("want no changes, got %v", keys(got))
			}
			for _, want := range tt.changes {
				if _, ok := got[want]; !ok {
					t.Errorf("missing change %q; got %v", want, keys(got))
				}
			}
			for _, c := range r.Changes {
				for _, bad := range tt.mustNotSee {
					if strings.Contains(c.Diff, bad) {
						t.Errorf("%s/%s shows per-run noise %q:\n%s", c.Section, c.Key, bad, c.Diff)
					}
				}
			}
		})
	}
}

func TestCompareGatesShowsVerdictAndTimingPerPath(t *testing.T) {
	a := side("hardened", "0", "", "aaaa", evidence.Pass, nil)
	b := side("leaky", "0", "", "bbbb", evidence.Fail, nil)
	b.Results = b.Results[:1] // dns-exfiltration not run in B
	r := diff.Compare(a, b)
	want := map[string][2]evidence.Verdict{
		"external-callback/normal": {evidence.Pass, evidence.Fail},
		"dns-exfiltration/normal":  {evidence.Pass, ""},
	}
	for _, g := range r.Gates {
		w, ok := want[g.Gate+"/"+g.Path]
		if !ok {
			t.Errorf("unexpected gate row %+v", g)
			continue
		}
		if g.A != w[0] || g.B != w[1] || !g.Regressed() {
			t.Errorf("%s/%s: %s -> %s (regressed %v), want %s -> %s, regressed", g.Gate, g.Path, g.A, g.B, g.Regressed(), w[0], w[1])
		}
		delete(want, g.Gate+"/"+g.Path)
	}
	if len(want) > 0 {
		t.Errorf("missing gate rows %v", want)
	}
	if c := r.Changes[0]; c.Section != "run" || !strings.Contains(c.Diff, `"leaky"`) {
		t.Errorf("first change should name the profile change, got %+v", c)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
