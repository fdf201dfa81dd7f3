package top_test

// A test of a package mid's fence names: allowed.
import "example.com/planted/mid"

var _ = mid.Table
