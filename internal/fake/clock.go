package fake

import (
	"slices"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// ClockStart is where a [NewClock] clock starts.
var ClockStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a [clock.Clock] that moves only when told. A timer armed with
// AfterFunc fires during the Advance or Set that reaches its time, in the
// goroutine that called it, so that once Advance returns the timer's work
// is done: a test proves a timer did not fire by advancing past it, not by
// sleeping. The zero value stands at the zero time; it is safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*clockTimer
}

var _ clock.Clock = (*Clock)(nil)

// NewClock returns a Clock standing at start, or at [ClockStart] when start
// is the zero time.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = ClockStart
	}
	return &Clock{now: start}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward, firing the timers it passes.
func (c *Clock) Advance(d time.Duration) {
	c.Set(c.Now().Add(d))
}

// Set moves the clock to t (never back), through the times of the timers
// due by then, firing each in turn: a timer armed by one of them fires too
// when it is due by t.
func (c *Clock) Set(t time.Time) {
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
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct := &clockTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, ct)
	return ct
}

// Timers is how many timers are armed and not yet fired or stopped.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type clockTimer struct {
	c  *Clock
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
