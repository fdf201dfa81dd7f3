package stray_test

// A test that imports the fenced package mid, which its fence does not
// allow: tests count, since they link what they import.
import "example.com/planted/mid"

var _ = mid.Table
