package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

// Each section's type is its kind's own, but it is decoded as strictly
// as the rest of the file: an unknown key inside it is refused at its
// line, and where a file has two mistakes the first by line is the one
// reported, whichever of them is in a section.
func TestSectionsDecodeStrictly(t *testing.T) {
	ids := "name: t\nnetwork: lab\npaths:\n  normal: {uid: 1000, gid: 1000}\n  assume-breach: {uid: 0, gid: 0}\n"
	for _, tc := range []struct {
		name, yaml string
		field      string
		line       int
		msg        string
	}{
		{"bwrap", ids + "target: bwrap\nbwrap:\n  args: [--unshare-user]\n  argz: [x]\n", "argz", 9, "unknown field"},
		{"exec", ids + "target: exec\nexec:\n  argv: [sb, --]\n  files: {}\n  versoin: [sb]\n", "versoin", 10, "unknown field"},
		{"firejail", ids + "target: firejail\nfirejail: {args: [--quiet], file: {}}\n", "file", 7, "unknown field"},
		{"srt", ids + "target: srt\nsrt:\n  setings: x.json\n", "setings", 8, "unknown field"},
		{"codex", ids + "target: codex-sandbox\ncodex: {config: c.toml, profil: p}\n", "profil", 7, "unknown field"},
		{"a section's type error", ids + "target: bwrap\nbwrap: {args: notalist}\n", "", 7, "cannot unmarshal"},
		{"a top-level key before a section's error", ids + "target: bwrap\negres: x.nft\nbwrap: {args: notalist}\n", "egres", 7, "unknown field"},
		{"a section's error before a top-level key", ids + "target: bwrap\nbwrap: {args: notalist}\negres: x.nft\n", "", 7, "cannot unmarshal"},
		{"a shared field's error before a section's", "limits: {stop: soon}\n" + ids + "target: bwrap\nbwrap: {argz: [x]}\n", "", 1, "cannot unmarshal"},
		{"bwrap on another target", ids + "target: docker\nbwrap: {args: [--unshare-user]}\n", "bwrap", 7, "not for target docker"},
		{"workspace on a target that binds its own", ids + "target: bwrap\nbwrap: {args: [--unshare-user]}\nworkspace: \"{{place:storage}}\"\n", "workspace", 8, "only for wrapper targets (exec, firejail, srt, codex-sandbox)"},
		{"srt on codex", ids + "target: codex-sandbox\nsrt: {settings: x.json}\n", "srt", 7, "only for target srt (target is codex-sandbox)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kinds.Load(writeProfile(t, tc.yaml, nil))
			var pe *profile.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Load() error = %v, want *profile.Error", err)
			}
			if pe.Field != tc.field || pe.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q: field %q line %d; want field %q line %d containing %q", err, pe.Field, pe.Line, tc.field, tc.line, tc.msg)
			}
		})
	}
}

// An empty section says nothing, so it is no other kind's section set.
func TestEmptySectionOfAnotherKind(t *testing.T) {
	y := base + "exec: {argv: [], files: {}}\nfirejail: {args: []}\nsrt: {}\nworkspace: \"\"\n"
	if _, err := kinds.Load(writeProfile(t, y, nil)); err != nil {
		t.Fatalf("Load() = %v, want the bwrap profile", err)
	}
}

// Kinds that read one section must decode it as one type.
func TestSectionTypesAgree(t *testing.T) {
	one := fakeKind{}
	two := otherFake{}
	_, err := profile.Load(writeProfile(t, strings.Replace(base, "target: bwrap", "target: fake", 1), nil), profile.Kinds{one, two})
	if err == nil || !strings.Contains(err.Error(), "declare section bwrap as") {
		t.Fatalf("Load() = %v, want the two types refused", err)
	}
}

// otherFake reads the fake's bwrap section as a type of its own.
type otherFake struct{ fakeKind }

func (otherFake) Name() string { return "other" }
func (otherFake) Sections() []profile.Section {
	return []profile.Section{{Name: "bwrap", Zero: struct{ Args string }{}}}
}
