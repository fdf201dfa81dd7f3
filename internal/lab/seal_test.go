package lab_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/lab"
)

func TestSealedFailsClosed(t *testing.T) {
	l := upLab(t)
	ctx := context.Background()
	if err := l.Sealed(ctx); err != nil {
		t.Fatalf("fresh lab not sealed: %v", err)
	}
	nw := attach(t, l, "s1")
	if err := l.Sealed(ctx); err != nil {
		t.Fatalf("lab with one session not sealed: %v", err)
	}
	veth := labVeth(t, l)

	tests := []struct {
		name    string
		args    []string // ip command run in the lab namespace to open a "way out"
		undo    []string
		finding string
	}{
		// The veth's peer is our own session namespace, so nothing escapes
		// while the test breaks the seal on purpose.
		{"v4 default route", []string{"route", "add", "default", "dev", veth}, []string{"route", "del", "default", "dev", veth}, "default route"},
		{"v6 default route", []string{"-6", "route", "add", "default", "dev", veth}, []string{"-6", "route", "del", "default", "dev", veth}, "default route"},
		{"static route in another table", []string{"route", "add", "10.0.0.0/8", "dev", veth, "table", "100"}, []string{"route", "del", "10.0.0.0/8", "dev", veth, "table", "100"}, "not a connected route"},
		{"foreign interface", []string{"link", "add", "gh-foreign", "type", "veth", "peer", "name", "gh-foreign-p"}, []string{"link", "del", "gh-foreign"}, "interface gh-foreign"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runIP(t, append([]string{"-n", l.Name()}, tc.args...)...)
			undone := false
			undo := func() {
				if !undone {
					undone = true
					runIP(t, append([]string{"-n", l.Name()}, tc.undo...)...)
				}
			}
			t.Cleanup(undo)

			var ue *lab.UnsealedError
			err := l.Sealed(ctx)
			if !errors.As(err, &ue) {
				t.Fatalf("Sealed = %v, want *UnsealedError", err)
			}
			if !strings.Contains(err.Error(), tc.finding) {
				t.Errorf("finding %q not in %v", tc.finding, err)
			}
			_, err = l.Attach(ctx, "s2")
			if !errors.As(err, &ue) {
				t.Fatalf("Attach while unsealed = %v, want *UnsealedError", err)
			}
			if left := labNamespaces(t, l.Name()+"-s2"); len(left) > 0 {
				t.Errorf("refused Attach still created %v", left)
			}
			undo()
			if err := l.Sealed(ctx); err != nil {
				t.Fatalf("still unsealed after undo: %v", err)
			}
		})
	}
	if nw.Resolver != lab.ResolverV4 || nw.NetnsPath != "/run/netns/"+nw.NetnsName {
		t.Errorf("network = %+v", nw)
	}
}

// labVeth finds the lab end of the only attached session's veth.
func labVeth(t *testing.T, l *lab.Lab) string {
	t.Helper()
	var links []struct {
		Name string `json:"ifname"`
	}
	out := runIP(t, "-j", "-n", l.Name(), "link", "show", "type", "veth")
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("want one veth in %s, got %q (%v)", l.Name(), out, err)
	}
	return links[0].Name
}

func runIP(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
