// Package features holds the gates as Gherkin, one .feature file per gate,
// embedded so the gatehouse binary carries the exact text it runs.
package features

import "embed"

// FS holds every *.feature file of this folder.
//
//go:embed *.feature
var FS embed.FS
