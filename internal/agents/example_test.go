package agents_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/agents"
)

// How the harness runs an agent in a session: look the adapter up, open its
// install (Cache.Install fetches it when missing), and turn an Invocation
// into binds, files and a command for targets.Session.Exec. Its stdout then
// goes to Parse.
func ExampleAdapter_Launch() {
	a, err := agents.Lookup("codex")
	if err != nil {
		panic(err)
	}
	in, err := agents.DefaultCache(os.Getenv).Open(a)
	if err != nil {
		// Not installed: 'gatehouse agents install codex'. Shown here with
		// the record Open would return.
		in = agents.Installed{Agent: "codex", Dir: "/var/cache/gatehouse/agents/codex-0.171.0",
			Binary: agents.File{Path: "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"}}
	}
	l, err := a.Launch(in, agents.Invocation{
		ModelURL: "http://203.0.113.100", Key: "gh.s1.token", Task: "Triage /gatehouse/inbox/report.md",
		Home: "/gatehouse/home/agent", WorkDir: "/gatehouse/work",
	})
	if err != nil {
		panic(err)
	}
	for _, b := range l.Binds {
		fmt.Println("bind read-only:", b.Sandbox)
	}
	fmt.Println("runs from its bind:", strings.HasPrefix(l.Command.Args[0], l.Binds[0].Sandbox+"/"))
	fmt.Println("key in:", "GH_KEY="+l.Command.Env["GH_KEY"])
	fmt.Println("own sandbox:", l.Facts["own_sandbox"])
	// Output:
	// bind read-only: /gatehouse/agent/codex
	// runs from its bind: true
	// key in: GH_KEY=gh.s1.token
	// own sandbox: off (-s danger-full-access)
}
