// Package gopool runs functions on goroutines that, once a function
// returns, wait a while for the next one. A new goroutine's stack starts
// at a few KiB and is copied each time it doubles; the runtime's work goes
// some dozen frames down into SQLite and the HTTP client, where a waiting
// goroutine's stack has grown already.
package gopool

import (
	"sync"
	"time"
)

// Pool runs functions (Go); at most max goroutines wait for one, each for
// wait at most. Its methods are safe for concurrent use.
type Pool struct {
	max  int
	wait time.Duration
	next chan func() // a function, to a waiting goroutine

	mu      sync.Mutex
	waiting int
	closed  bool
	quit    chan struct{} // closed by Close: the waiting goroutines end
}

// New returns a Pool whose goroutines wait for wait, at most max at once.
func New(max int, wait time.Duration) *Pool {
	return &Pool{max: max, wait: wait, next: make(chan func()), quit: make(chan struct{})}
}

// Go runs f on a waiting goroutine, or on a new one. It never blocks.
func (p *Pool) Go(f func()) {
	select {
	case p.next <- f:
	default:
		go p.run(f)
	}
}

// Waiting is how many goroutines wait for a function.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// Close ends the waiting goroutines, and those still running end with
// their function. Go still runs functions after, each on a goroutine of
// its own.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.quit)
	}
}

func (p *Pool) run(f func()) {
	var timer *time.Timer
	for f != nil {
		f()
		if timer == nil {
			timer = time.NewTimer(p.wait)
			defer timer.Stop()
		} else {
			timer.Reset(p.wait)
		}
		f = p.await(timer)
	}
}

// await returns the next function, or nil when the goroutine should end:
// enough wait already, the pool closed, or the wait is over.
func (p *Pool) await(timer *time.Timer) func() {
	p.mu.Lock()
	if p.closed || p.waiting >= p.max {
		p.mu.Unlock()
		return nil
	}
	p.waiting++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	select {
	case f := <-p.next:
		return f
	case <-timer.C:
	case <-p.quit:
	}
	return nil
}
