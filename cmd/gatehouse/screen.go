package main

import (
	"io"

	"github.com/gatehouse-dev/gatehouse/internal/minted"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

// Every verb prints through screen: whatever a printer forgot to escape or
// redact (a file name from a sandbox, a version string from a registry, an
// error quoting a hit), no escape sequence, overwrite or bidi control
// reaches the terminal and no value the harness made reaches a CI log.
// Printers still escape each sandbox-chosen value themselves (Redact, on
// one line), so it cannot add lines either; this is the net under them.
// A verb that must write raw bytes (a status line's redraw, the token
// `intake mint` exists to print) takes termsafe.Raw of its writer, on
// purpose and visibly.
func screen(w io.Writer) *termsafe.Writer {
	return termsafe.NewWriter(w, minted.Redact)
}
