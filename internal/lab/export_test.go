package lab

import "context"

// ReadSysctl lets the black-box tests read a namespace's sysctl back.
var ReadSysctl = readSysctl

// AddStop registers f with the lab's endpoint shutdowns, as an endpoint
// that closes its socket at Close.
func AddStop(l *Lab, f func(ctx context.Context) error) { l.stops = append(l.stops, f) }
