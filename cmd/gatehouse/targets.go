package main

import (
	"gatehouse/targets"
	"gatehouse/targets/bwrap"
	"gatehouse/targets/profile"
)

// newTarget is the explicit registry of target adapters.
func newTarget(name string, prof *profile.Profile) (targets.Target, error) {
	switch name {
	case "bwrap":
		return bwrap.New(bwrap.Options{Profile: prof}), nil
	default:
		return nil, usagef("unknown target %q; known targets: bwrap", name)
	}
}
