package fake

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Swapper plays a sandboxed command racing the code under test: it keeps
// exchanging pairs of names atomically (renameat2 RENAME_EXCHANGE), as a
// process that may write a folder can, to swap a symlink to somewhere else
// in between the code's check of a path and its open.
type Swapper struct {
	pairs [][2]string
	stop  atomic.Bool
	wg    sync.WaitGroup
	flips atomic.Int64
}

// NewSwapper exchanges each pair of paths once, to show that the kernel and
// the file system can, and skips the test where they cannot (renameat2 is
// Linux's). The swapping stops with the test if Stop was not called.
func NewSwapper(t testing.TB, pairs ...[2]string) *Swapper {
	t.Helper()
	for _, p := range pairs {
		if err := exchange(p[0], p[1]); err != nil {
			t.Skipf("no atomic exchange of two names here: %v", err)
		}
	}
	s := &Swapper{pairs: pairs}
	t.Cleanup(func() { s.Stop() })
	return s
}

// Start starts exchanging every pair, over and over, in a goroutine of its
// own.
func (s *Swapper) Start() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for !s.stop.Load() {
			for _, p := range s.pairs {
				_ = exchange(p[0], p[1])
			}
			s.flips.Add(1)
		}
	}()
}

// Stop stops the exchanges and returns how many rounds of them ran.
func (s *Swapper) Stop() int64 {
	s.stop.Store(true)
	s.wg.Wait()
	return s.flips.Load()
}
