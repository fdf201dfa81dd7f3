package lab

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCleanupRemovesLeftovers plays a crashed run: a lab and a session are
// left up, and cleanup (restricted to this lab, so that labs of other tests
// on the machine survive) removes both.
func TestCleanupRemovesLeftovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip command")
	}
	ctx := context.Background()
	l, err := Up(ctx, Options{Logf: t.Logf})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { _ = l.Close(context.WithoutCancel(ctx)) }) // stops the endpoints
	if _, err := l.Attach(ctx, "crashed"); err != nil {
		t.Fatalf("Attach: %v", err)
	}
	ours := func(n string) bool { return n == l.name || strings.HasPrefix(n, l.name+"-") }
	count := func() (n int) {
		names, err := List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, name := range names {
			if ours(name) {
				n++
			}
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("List shows %d of this lab's namespaces, want 2", n)
	}
	if err := cleanup(ctx, ours); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d namespaces left after cleanup", n)
	}
}
