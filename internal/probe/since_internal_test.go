package probe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// TestFindChangedSince: a find with ChangedSince reads only files changed
// since (new ones, and old ones written to since), leaves the older ones
// unopened and says how many (the bulk and old/value); a folder of more older files than the search
// bound is searched completely, where without ChangedSince it is partial.
func TestFindChangedSince(t *testing.T) {
	root := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old/value", "gha0000000000000001")
	write("old/appended", "nothing yet\n")
	for i := range searchFiles + 1 {
		write(fmt.Sprintf("bulk/%03d/f%d", i%100, i), "x")
	}
	// File times come from the kernel's coarse clock: keep clear of it.
	time.Sleep(50 * time.Millisecond)
	since := time.Now()
	time.Sleep(50 * time.Millisecond)
	write("new/value", "gha0000000000000002")
	f, err := os.OpenFile(filepath.Join(root, "old/appended"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("gha0000000000000003\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, tc := range []struct {
		name    string
		since   time.Time
		outcome string
		found   []string
		gone    []string
	}{
		{"every file", time.Time{}, wire.OutcomePartial, nil, nil},
		{"changed since", since, wire.OutcomeCompleted,
			[]string{"gha0000000000000002", "gha0000000000000003"}, []string{"gha0000000000000001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var rep wire.Report
			err := doFind(ctx, wire.Step{ID: "f", Kind: wire.KindFind, Target: root, ChangedSince: tc.since}, &rep)
			if got := classify(err); got != tc.outcome {
				t.Fatalf("outcome %s (%v), want %s", got, err, tc.outcome)
			}
			for _, v := range tc.found {
				if !strings.Contains(rep.Excerpt, v) {
					t.Errorf("%s not found: %q", v, rep.Excerpt)
				}
			}
			for _, v := range tc.gone {
				if strings.Contains(rep.Excerpt, v) {
					t.Errorf("%s, in a file unchanged since, was read: %q", v, rep.Excerpt)
				}
			}
			if !tc.since.IsZero() && !strings.Contains(rep.Excerpt, fmt.Sprintf("not opened: %d files last changed before", searchFiles+2)) {
				t.Errorf("the unopened files are not counted: %q", rep.Excerpt)
			}
		})
	}
}

// TestSearchEntersTheFolderItIsAskedFor: a folder skipped as the probe's own
// (a wrapper's agent home is a mount under /gatehouse) is searched when a
// search names it, as "~" does; a folder skipped for another reason, and
// the probe's folders below the named one, stay skipped.
func TestSearchEntersTheFolderItIsAskedFor(t *testing.T) {
	root := writeTree(t, map[string]string{
		"home/nonce": "gha0000000000000006", "home/own/nonce": "gha0000000000000007", "usr/nonce": "gha0000000000000008",
	})
	ids := map[string]wire.FileID{}
	for _, d := range []string{"home", "home/own", "usr"} {
		id, err := wire.StatID(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		ids[d] = id
	}
	for _, tc := range []struct {
		name, root string
		want       []string
	}{
		{"the probe's folder named", "home", []string{"gha0000000000000006"}},
		{"a system folder named", "usr", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(wire.Tokens, "")
			s := newSearch(context.Background(), func(p string, st *unix.Stat_t) {
				b, _ := os.ReadFile(p)
				c.values(b, p)
			})
			s.skip = map[wire.FileID]string{ids["home"]: probeOwn, ids["home/own"]: probeOwn, ids["usr"]: "read-only system software"}
			r := filepath.Join(root, tc.root)
			s.enterNamed(r)
			_ = s.run([]string{r})
			if got := c.found(); !slices.Equal(got, tc.want) {
				t.Errorf("found %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBeforeDeadline: a search ends a tenth of its time (at most 500 ms)
// before its attempt's deadline, so that it names where it stopped; with
// no deadline it has none.
func TestBeforeDeadline(t *testing.T) {
	for _, tc := range []struct {
		left, margin time.Duration
	}{{time.Second, 100 * time.Millisecond}, {time.Minute, 500 * time.Millisecond}} {
		ctx, cancel := context.WithTimeout(context.Background(), tc.left)
		outer, _ := ctx.Deadline()
		inner, stop := beforeDeadline(ctx)
		d, ok := inner.Deadline()
		if early := outer.Sub(d); !ok || early < tc.margin-10*time.Millisecond || early > tc.margin {
			t.Errorf("%v left: the search ends %v before the deadline, want about %v", tc.left, early, tc.margin)
		}
		stop()
		cancel()
	}
	if _, ok := func() (time.Time, bool) {
		c, stop := beforeDeadline(context.Background())
		defer stop()
		return c.Deadline()
	}(); ok {
		t.Error("a search without a deadline got one")
	}
}
