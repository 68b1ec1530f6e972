package clock

import (
	"slices"
	"sync"
	"time"
)

// Manual is a [Clock] that moves only when told. A timer armed with
// AfterFunc fires during the Advance or Set that reaches its time, in the
// goroutine that called it, so that once Advance returns the timer's work
// is done: the simulator's advance step, and a test that proves a timer
// did not fire by advancing past it rather than by sleeping. The zero
// value stands at the zero time; it is safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*clockTimer
}

var _ Clock = (*Manual)(nil)

// NewManual returns a Manual clock standing at start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now is the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward, firing the timers it passes.
func (c *Manual) Advance(d time.Duration) {
	c.Set(c.Now().Add(d))
}

// Set moves the clock to t (never back), through the times of the timers
// due by then, firing each in turn: a timer armed by one of them fires too
// when it is due by t.
func (c *Manual) Set(t time.Time) {
	for {
		c.mu.Lock()
		i := -1
		for j, ct := range c.timers {
			if !ct.at.After(t) && (i < 0 || ct.at.Before(c.timers[i].at)) {
				i = j
			}
		}
		if i < 0 {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		due := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		if due.at.After(c.now) {
			c.now = due.at
		}
		c.mu.Unlock()
		due.f()
	}
}

// AfterFunc arms a timer that calls f once the clock has moved d on.
func (c *Manual) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct := &clockTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, ct)
	return ct
}

// Timers is how many timers are armed and not yet fired or stopped.
func (c *Manual) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type clockTimer struct {
	c  *Manual
	at time.Time
	f  func()
}

func (ct *clockTimer) Stop() bool {
	ct.c.mu.Lock()
	defer ct.c.mu.Unlock()
	i := slices.Index(ct.c.timers, ct)
	if i < 0 {
		return false
	}
	ct.c.timers = slices.Delete(ct.c.timers, i, i+1)
	return true
}
