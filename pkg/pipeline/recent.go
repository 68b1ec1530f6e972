package pipeline

import "sync"

// recent is a bounded set of recently seen keys, oldest evicted first. It
// catches duplicates inside one process without touching the store.
type recent struct {
	mu    sync.Mutex
	max   int
	keys  map[string]uint64 // key → seq of the slot that holds it
	order []entry
	next  int
	seq   uint64
}

type entry struct {
	key string
	seq uint64
}

// newRecent returns an empty set of at most max keys; it grows as keys come
// (a persona that sees few events keeps a small one).
func newRecent(max int) *recent {
	return &recent{max: max, keys: map[string]uint64{}}
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
		r.keys[k] = r.seq
		if len(r.order) < r.max {
			r.order = append(r.order, entry{k, r.seq})
		} else {
			// Evict the oldest slot, unless its key was re-added since.
			old := r.order[r.next]
			if seq, ok := r.keys[old.key]; ok && seq == old.seq {
				delete(r.keys, old.key)
			}
			r.order[r.next] = entry{k, r.seq}
			r.next = (r.next + 1) % r.max
		}
		r.seq++
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
