package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// A target that names no kind Load was given is refused at the target
// field, naming the kinds there are: never read as some default kind.
func TestLoadRefusesUnknownKind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		kinds profile.Kinds
		known string
	}{
		{"a target no adapter defines", strings.Replace(base, "target: bwrap", "target: qemu", 1), kinds.All, "bwrap, docker, gvisor, exec, firejail, srt, codex-sandbox"},
		{"a known target missing from the list given", base, profile.Kinds{fakeKind{}}, "fake"},
		{"no kinds at all", base, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeProfile(t, tc.yaml, nil)
			p, err := profile.Load(file, tc.kinds)
			var pe *profile.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Load() = %v, %v; want a *profile.Error", p, err)
			}
			if pe.Field != "target" || pe.Line != 2 || !strings.Contains(err.Error(), "not a known target; known targets: "+tc.known) {
				t.Fatalf("error %q (field %q, line %d); want it at target, line 2, listing %q", err, pe.Field, pe.Line, tc.known)
			}
		})
	}
}

// fakeKind is a kind of the test's own: what the profile reports of a
// target comes from the target's kind, not from profile.
type fakeKind struct{ loaded *int }

func (fakeKind) Name() string { return "fake" }
func (fakeKind) Sections() []profile.Section {
	return []profile.Section{{Name: "bwrap", Zero: fakeSection{}}}
}

// fakeSection is the fake's own type for the bwrap key.
type fakeSection struct {
	Args []string `yaml:"args"`
}

func (k fakeKind) Load(l *profile.Loading) error {
	if k.loaded != nil {
		*k.loaded++
	}
	if len(profile.SectionOf[fakeSection](l.Profile(), "bwrap").Args) > 2 {
		return l.FailItem("bwrap.args", 2, errors.New("the fake takes two"))
	}
	return nil
}
func (fakeKind) Describe(p *profile.Profile) profile.Description {
	return profile.Description{
		Runtime:       "the fake runtime",
		Caps:          map[targets.Path]profile.CapSet{targets.PathBreach: profile.CapsOf([]string{"NET_ADMIN"})},
		IdentityWhere: "wherever the fake says",
		EgressBypass:  "the fake sends around it",
		SecretOther:   "the fake has one user",
	}
}

func TestKindOwnsItsSection(t *testing.T) {
	fake := strings.Replace(base, "target: bwrap", "target: fake", 1)
	n := 0
	ks := profile.Kinds{fakeKind{loaded: &n}, kinds.All[1]}
	p, err := profile.Load(writeProfile(t, fake, map[string]string{"x.nft": "table inet x {}\n"}), ks)
	if err != nil || n != 1 {
		t.Fatalf("Load() = %v after %d Load call(s) of the kind; want the profile, one call", err, n)
	}
	pl := profile.NewPlan(p, nil, false)
	if pl.Runtime != "the fake runtime" || pl.Paths[1].Capabilities != "CAP_NET_ADMIN" {
		t.Errorf("plan runtime %q, assume-breach capabilities %q: want the kind's", pl.Runtime, pl.Paths[1].Capabilities)
	}
	if p.Kind().Name() != "fake" {
		t.Errorf("Kind() = %q, want fake", p.Kind().Name())
	}

	_, err = profile.Load(writeProfile(t, strings.Replace(fake, "--unshare-net]", "--unshare-net, --x]", 1), nil), ks)
	if err == nil || !strings.Contains(err.Error(), "bwrap.args: the fake takes two") {
		t.Errorf("a refusal of the kind's Load: %v", err)
	}
	_, err = profile.Load(writeProfile(t, fake+"secret_process: {where: inside, user: other}\n", nil), ks)
	if err == nil || !strings.Contains(err.Error(), "the fake has one user") {
		t.Errorf("secret_process inside as other under a kind that refuses it: %v", err)
	}
	// The docker section belongs to the docker kind: the message names the
	// kinds in the list given that own it.
	_, err = profile.Load(writeProfile(t, fake+"docker: {privileged: true}\n", nil), ks)
	if err == nil || !strings.Contains(err.Error(), "docker: only for target docker (target is fake)") {
		t.Errorf("another kind's section: %v", err)
	}
}
