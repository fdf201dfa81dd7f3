package agents

import (
	"fmt"
	"strings"
)

// Tools are the non-agent npm packages Gatehouse installs the same way:
// sandbox wrappers a target runs (srt). They have no launch and no parse.
func Tools() []string { return []string{"srt"} }

// Tool returns the install description of a tool named by Tools.
func Tool(name string) (Adapter, error) {
	switch name {
	case "srt":
		return SandboxRuntime(), nil
	}
	return Adapter{}, fmt.Errorf("agents: unknown tool %q (have %s)", name, strings.Join(Tools(), ", "))
}

// SandboxRuntime is Anthropic's sandbox-runtime (the srt command): plain
// JavaScript whose four dependencies are not bundled, so each is pinned
// here (the versions npm resolves for 0.0.83's ranges; none has
// dependencies of its own). It declares Node >= 22.12: it runs on the same
// Node 22 from the registry as Qwen Code, never the host's Node. Its
// Debian dependencies (bubblewrap, socat, ripgrep) come from
// scripts/setup.sh.
func SandboxRuntime() Adapter {
	const pkg, version = "@anthropic-ai/sandbox-runtime", "0.0.83"
	mod := func(name, v string) part {
		return part{pkg: name, version: v, file: "package.json", under: pkg + "/node_modules"}
	}
	return Adapter{
		Name: "srt", Package: pkg, Version: version,
		agent: part{pkg: pkg, version: version, file: "dist/cli.js"},
		modules: []part{
			mod("@pondwader/socks5-server", "1.0.10"),
			mod("commander", "12.1.0"),
			mod("node-forge", "1.4.3"),
			mod("zod", "3.25.76"),
		},
		runtime: nodeRuntime(),
	}
}

// nodeRuntime is Node 22 from the npm registry's node package (Debian 12
// has Node 18, this machine kind Node 20).
func nodeRuntime() *part {
	return &part{pkg: "node", version: "22.23.3", platform: "node-" + platformSuffix(), file: "bin/node"}
}
