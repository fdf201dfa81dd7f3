package realwrap_test

import (
	"errors"
	"os"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
	"github.com/gatehouse-dev/gatehouse/internal/targets/exec"
	"github.com/gatehouse-dev/gatehouse/internal/targets/realwrap"
)

// newTarget is realwrap.New with the wrapper's command from Gatehouse's
// tool cache, as the runner gives it; it skips when the tool is not
// installed.
func newTarget(tb testing.TB, opts exec.Options) *realwrap.Target {
	tb.Helper()
	tools, err := agents.DefaultCache(os.Getenv).WrapperTools(opts.Profile.Target)
	if errors.Is(err, agents.ErrNotInstalled) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	opts.Tools = tools
	tgt, err := realwrap.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return tgt
}
