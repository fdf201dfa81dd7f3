// Package base is the lowest layer of the fixture, and imports the middle
// one: the upward arrow the guard must find.
package base

import "example.com/planted/mid"

// Size is how many lines mid has.
func Size() int { return len(mid.Table()) }
