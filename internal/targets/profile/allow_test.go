package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/targets/kinds"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
)

const api = "{host: inference.lab.gatehouse.test, methods: [POST], paths: [/v1/complete], max_body: 65536, ports: [80, 443]}"

// allow is checked at load: one mistake each, refused with its field and line.
func TestAllowRefusedAtLoad(t *testing.T) {
	for _, tc := range []struct {
		name, allow, field, msg string
	}{
		{"no host", "{methods: [POST], paths: [/v1/complete]}", "allow.host", "required"},
		{"a host the lab does not serve", "{host: api.example.com, methods: [POST]}", "allow.host", "not the lab's allowed destination"},
		{"nothing declared", "{host: inference.lab.gatehouse.test}", "allow", "declares nothing"},
		{"lower-case method", "{host: inference.lab.gatehouse.test, methods: [post]}", "allow.methods", "upper case"},
		{"path without a slash", "{host: inference.lab.gatehouse.test, paths: [v1/complete]}", "allow.paths", "not a URL path"},
		{"path with a query", "{host: inference.lab.gatehouse.test, paths: ['/v1/complete?x=1']}", "allow.paths", "no query"},
		{"star inside a path", "{host: inference.lab.gatehouse.test, paths: ['/v1/*/x']}", "allow.paths", "only at the end"},
		{"negative max_body", "{host: inference.lab.gatehouse.test, max_body: -1}", "allow.max_body", "0 or more"},
		{"port out of range", "{host: inference.lab.gatehouse.test, ports: [80, 70000]}", "allow.ports", "not a port"},
		{"unknown field", "{host: inference.lab.gatehouse.test, method: [POST]}", "allow.method", "unknown field"},
		{"unknown field in a list", "[" + api + ", {host: inference.lab.gatehouse.test, path: [/x]}]", "allow[1].path", "unknown field"},
		{"empty list", "[]", "allow", "declares nothing"},
		{"not a mapping", "[POST]", "allow[0]", "want a mapping"},
		{"the control outside: method", "{host: inference.lab.gatehouse.test, methods: [GET]}", "allow", "positive control"},
		{"the control outside: path", "{host: inference.lab.gatehouse.test, paths: [/v1/models]}", "allow", "positive control"},
		{"the control outside: body", "{host: inference.lab.gatehouse.test, max_body: 10}", "allow", "positive control"},
		{"the control outside: port", "{host: inference.lab.gatehouse.test, ports: [443]}", "allow", "positive control"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kinds.Load(writeProfile(t, base+"allow: "+tc.allow+"\n", nil))
			var pe *profile.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Load() = %v, want *profile.Error", err)
			}
			if pe.Field != tc.field || pe.Line == 0 || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q (field %q, line %d); want field %q, a line, and %q", err, pe.Field, pe.Line, tc.field, tc.msg)
			}
		})
	}
}

// One entry or a list load into what the verdict reads; absent is nil, and
// the declaration is part of the policy digest.
func TestAllowLoads(t *testing.T) {
	plain, err := kinds.Load(writeProfile(t, base, nil))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Allow.Evidence() != nil {
		t.Errorf("no allow: %v, want nil", plain.Allow.Evidence())
	}
	one, err := kinds.Load(writeProfile(t, base+"allow: "+api+"\n", nil))
	if err != nil {
		t.Fatal(err)
	}
	want := evidence.Allow{Host: "inference.lab.gatehouse.test", Methods: []string{"POST"}, Paths: []string{"/v1/complete"}, MaxBody: 65536, Ports: []int{80, 443}}
	if got := one.Allow.Evidence(); len(got) != 1 || got[0].String() != want.String() {
		t.Errorf("one entry: %v, want %v", got, want)
	}
	list, err := kinds.Load(writeProfile(t, base+"allow:\n  - "+api+"\n  - {host: 203.0.113.100, methods: [GET], paths: ['/v1/models/*']}\n", nil))
	if err != nil {
		t.Fatal(err)
	}
	got := list.Allow.Evidence()
	if len(got) != 2 || got[1].MaxBody != -1 || got[1].Paths[0] != "/v1/models/*" {
		t.Errorf("list: %+v", got)
	}
	if one.Digest() == plain.Digest() || one.Digest() == list.Digest() {
		t.Errorf("the allow declaration does not change the policy digest")
	}
}
