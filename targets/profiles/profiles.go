// Package profiles holds the sandbox profiles Gatehouse ships, embedded so
// that `gatehouse run` works with no files of the team's own. Load one with
// kinds.LoadFS(profiles.FS, profiles.Default).
package profiles

import "embed"

// FS holds the shipped profiles and the files they reference.
//
//go:embed *.yaml *.nft *.json *.toml
var FS embed.FS

// Shipped profile files.
const (
	// Hardened: lab network, egress limited to the inference endpoint.
	Hardened = "bwrap-hardened.yaml"
	// Leaky: lab network, no egress ruleset, lax flags (a negative control).
	Leaky = "bwrap-leaky.yaml"
	// Offline: no network at all.
	Offline = "bwrap-offline.yaml"
	// Default is the profile used when none is named.
	Default = Hardened
)

// FirejailHardened: firejail in the session namespace, egress limited to
// the inference endpoint.
const FirejailHardened = "firejail-hardened.yaml"
