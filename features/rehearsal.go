package features

import (
	"embed"
	"io/fs"
)

//go:embed rehearsal/*.feature
var rehearsal embed.FS

// Rehearsal holds the report-triage rehearsal (gate "rehearsal"). It is
// kept apart from FS: it is not a gate 'run' selects, it needs inputs of
// its own (a repository, a report) and runs only under 'gatehouse rehearse'.
func Rehearsal() fs.FS {
	sub, err := fs.Sub(rehearsal, "rehearsal")
	if err != nil {
		panic(err) // the embedded folder always exists
	}
	return sub
}
