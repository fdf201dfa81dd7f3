package main

import (
	"sort"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence/comparison"
)

// summary is a run's session starts as the matrix shows them.

func (l *startLog) summary() comparison.ColdStart {
	l.mu.Lock()
	ds := append([]time.Duration(nil), l.ds...)
	l.mu.Unlock()
	if len(ds) == 0 {
		return comparison.ColdStart{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	p95 := ds[(len(ds)*95+99)/100-1]
	return comparison.ColdStart{N: len(ds), MedianMS: ms(ds[len(ds)/2]), P95MS: ms(p95)}
}
