package runner

import (
	"slices"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// ClockStart is where a simulation's clock starts: a fixed time, so that
// the times a transcript shows are the same on every run.
var ClockStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// simClock is the simulation's clock: it moves only when a step says
// (advance), firing the timers it passes, in the mover's goroutine.
type simClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*simTimer
}

var _ clock.Clock = (*simClock)(nil)

func newSimClock() *simClock { return &simClock{now: ClockStart} }

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d on, firing in turn each timer it passes.
func (c *simClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		i := -1
		for j, t := range c.timers {
			if !t.at.After(target) && (i < 0 || t.at.Before(c.timers[i].at)) {
				i = j
			}
		}
		if i < 0 {
			c.now = target
			c.mu.Unlock()
			return
		}
		t := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}

func (c *simClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &simTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

type simTimer struct {
	c  *simClock
	at time.Time
	f  func()
}

func (t *simTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	i := slices.Index(t.c.timers, t)
	if i < 0 {
		return false
	}
	t.c.timers = slices.Delete(t.c.timers, i, i+1)
	return true
}
