package pipeline

import "sync"

// recent is a bounded set of recently seen keys, oldest evicted first. It
// catches duplicates inside one process without touching the store.
type recent struct {
	mu    sync.Mutex
	max   int
	keys  map[string]struct{}
	order []string
	next  int
}

func newRecent(max int) *recent {
	return &recent{max: max, keys: make(map[string]struct{}, max), order: make([]string, 0, max)}
}

// addAll adds keys and reports whether none of them was present; when one
// was, nothing is added.
func (r *recent) addAll(keys []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if _, ok := r.keys[k]; ok {
			return false
		}
	}
	for _, k := range keys {
		r.keys[k] = struct{}{}
		if len(r.order) < r.max {
			r.order = append(r.order, k)
			continue
		}
		delete(r.keys, r.order[r.next])
		r.order[r.next] = k
		r.next = (r.next + 1) % r.max
	}
	return true
}

// removeAll forgets keys (after a failed store check, so a retry can pass).
func (r *recent) removeAll(keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		delete(r.keys, k)
	}
}
