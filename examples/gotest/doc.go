// Package gotest shows a team's own go test running Gatehouse's gates
// through gatehousetest (sandbox_test.go), and holds our test that the same
// test fails, subtest by subtest, when the profile leaks (leaky_test.go).
package gotest
