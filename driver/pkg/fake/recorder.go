package fake

import (
	"sync"

	"sigs.k8s.io/karpenter/pkg/events"
)

// Recorder is a Karpenter events.Recorder that keeps what is published, for tests to read.
// It applies no dedupe: a test sees every Publish.
type Recorder struct {
	mu        sync.Mutex
	published []events.Event
}

func (r *Recorder) Publish(published ...events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.published = append(r.published, published...)
}

// WithReason is every Event published with reason, in order.
func (r *Recorder) WithReason(reason string) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var matching []events.Event
	for _, event := range r.published {
		if event.Reason == reason {
			matching = append(matching, event)
		}
	}
	return matching
}
