package targettest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// PlantedCopyIn is the hostile check of CopyIn into the session's work
// folder, which the sandbox can write: from inside, the session plants a
// FIFO and links at the names the harness writes next (a plan file, a
// folder on the way to one), pointing at a folder on the host. Each CopyIn
// must come back within its context, either having replaced the planted
// entry with the file or with an error, and nothing may be written on the
// host through a link. The sandbox needs mkfifo and ln (the host's /usr,
// or busybox).
func PlantedCopyIn(t *testing.T, s targets.Session) {
	t.Helper()
	host := t.TempDir() // where a followed link would write
	victim := filepath.Join(host, "victim")
	for _, c := range []struct {
		name, plant, copyTo string
	}{
		{"fifo_at_the_next_plan", `mkfifo "$1"`, WorkDir + "/gh-plan-2.json"},
		{"link_at_the_next_plan", `ln -s "$2" "$1"`, WorkDir + "/gh-plan-3.json"},
		{"link_to_a_host_folder_on_the_way", `ln -s "$3" "$1"`, WorkDir + "/gh-run-4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			must(t, s, c.plant, c.copyTo, victim, host)
			dst := c.copyTo
			if c.name == "link_to_a_host_folder_on_the_way" {
				dst += "/reports.jsonl"
			}
			want := randomName("copied-")
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.CopyIn(ctx, dst, strings.NewReader(want+"\n"), 0o644) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(callTimeout + killBound):
				t.Fatalf("CopyIn(%s) still blocked %v after its context ended", dst, killBound)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("CopyIn(%s) ran into its deadline: it blocked on the planted entry", dst)
			}
			if err == nil {
				// Replaced: the sandbox reads back what was copied.
				if got := must(t, s, shRead, dst); got != want {
					t.Fatalf("CopyIn(%s) succeeded, but the sandbox reads %q, want %q", dst, got, want)
				}
			}
			entries, rerr := os.ReadDir(host)
			if rerr != nil {
				t.Fatal(rerr)
			}
			for _, e := range entries {
				t.Errorf("CopyIn(%s) (err %v) wrote %s on the host through a planted link", dst, err, filepath.Join(host, e.Name()))
			}
		})
	}
}
