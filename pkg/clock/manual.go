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
// did not fire by advancing past it rather than by sleeping. A NewTimer's
// or NewTicker's channel has its time by then (what its reader does with
// it, in its own goroutine, may not be done). A ticker ticks once in an
// Advance that passes one or more of its ticks (the channel holds one tick
// and a time.Ticker drops the ticks its reader is late for), and goes on
// on its period's grid. The zero value stands at the zero time; it is
// safe for concurrent use.
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

// Since is the time elapsed on the clock since t.
func (c *Manual) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

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
		at := due.at
		if at.After(c.now) {
			c.now = at
		}
		if due.period > 0 {
			// A ticker: its next tick is the first of its grid after t.
			due.at = at.Add((t.Sub(at)/due.period + 1) * due.period)
		} else {
			c.timers = slices.Delete(c.timers, i, i+1)
		}
		c.mu.Unlock()
		if due.f != nil {
			due.f()
			continue
		}
		select {
		case due.ch <- at:
		default: // a tick the reader has not taken yet
		}
	}
}

// AfterFunc arms a timer that calls f once the clock has moved d on.
func (c *Manual) AfterFunc(d time.Duration, f func()) Timer {
	return c.arm(&clockTimer{c: c, f: f}, d)
}

// NewTimer arms a timer that sends the clock's time on its channel once
// the clock has moved d on.
func (c *Manual) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	ct := c.arm(&clockTimer{c: c, ch: make(chan time.Time, 1)}, d)
	return ct, ct.ch
}

// NewTicker sends the clock's time on its channel every d the clock
// moves on. It panics when d is not above zero, as time.NewTicker does.
func (c *Manual) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	ct := c.arm(&clockTimer{c: c, ch: make(chan time.Time, 1), period: d}, d)
	return manualTicker{ct}, ct.ch
}

func (c *Manual) arm(ct *clockTimer, d time.Duration) *clockTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct.at = c.now.Add(d)
	c.timers = append(c.timers, ct)
	return ct
}

// Timers is how many timers (and tickers) are armed and not yet fired or
// stopped.
func (c *Manual) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type clockTimer struct {
	c      *Manual
	at     time.Time
	f      func()         // AfterFunc's, else nil
	ch     chan time.Time // NewTimer's or NewTicker's, else nil
	period time.Duration  // a ticker's, else 0
}

// Stop disarms the timer; like a time.Timer's since Go 1.23, its channel
// holds no time sent before.
func (ct *clockTimer) Stop() bool {
	ct.c.mu.Lock()
	defer ct.c.mu.Unlock()
	ct.drain()
	i := slices.Index(ct.c.timers, ct)
	if i < 0 {
		return false
	}
	ct.c.timers = slices.Delete(ct.c.timers, i, i+1)
	return true
}

// Reset arms the timer again, d from the clock's time.
func (ct *clockTimer) Reset(d time.Duration) bool {
	ct.c.mu.Lock()
	defer ct.c.mu.Unlock()
	ct.drain()
	ct.at = ct.c.now.Add(d)
	if slices.Contains(ct.c.timers, ct) {
		return true
	}
	ct.c.timers = append(ct.c.timers, ct)
	return false
}

func (ct *clockTimer) drain() {
	if ct.ch == nil {
		return
	}
	select {
	case <-ct.ch:
	default:
	}
}

type manualTicker struct{ ct *clockTimer }

func (t manualTicker) Stop() { t.ct.Stop() }

func (t manualTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	t.ct.c.mu.Lock()
	t.ct.period = d
	t.ct.c.mu.Unlock()
	t.ct.Reset(d)
}
