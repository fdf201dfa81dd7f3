package profile

import "testing"

// The egress ruleset is fetched in one place: a named ruleset that was not
// loaded is an error (it was read as no rules at all, in three places).
func TestEgressRulesNamedButNotLoaded(t *testing.T) {
	p := &Profile{Name: "p", Egress: "rules.nft", files: map[string][]byte{"rules.nft": []byte("table inet x {}")}}
	if b, err := p.EgressRules(); err != nil || string(b) != "table inet x {}" {
		t.Errorf("loaded ruleset: %q, %v", b, err)
	}
	p.files = nil
	if b, err := p.EgressRules(); err == nil {
		t.Errorf("missing ruleset: %q with no error, want one", b)
	}
	p.Egress = ""
	if b, err := p.EgressRules(); err != nil || b != nil {
		t.Errorf("no egress named: %q, %v, want nothing", b, err)
	}
}
