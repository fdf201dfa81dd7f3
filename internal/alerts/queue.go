package alerts

import (
	"sync/atomic"

	"github.com/gatehouse-dev/gatehouse/detect"
)

// queue is a bounded hand-off: under a flood, events past its capacity are
// dropped and counted rather than held.
type queue struct {
	ch        chan detect.Event
	dropped   atomic.Uint64
	malformed atomic.Uint64
}

func newQueue(n int) *queue {
	if n <= 0 {
		n = DefaultQueue
	}
	return &queue{ch: make(chan detect.Event, n)}
}

// DefaultQueue is how many events a source holds for a slow reader.
const DefaultQueue = 1024

func (q *queue) put(e detect.Event) {
	select {
	case q.ch <- e:
	default:
		q.dropped.Add(1)
	}
}
