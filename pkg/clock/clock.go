package clock

import (
	"context"
	"time"
)

// Clock tells the time and arms timers. A nil Clock is not one: a package
// that takes a Clock as an option reads it through [Or], so that leaving
// it unset means [System].
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// Since is the time elapsed since t: Now().Sub(t).
	Since(t time.Time) time.Duration
	// AfterFunc calls f once d has passed, unless the returned Timer is
	// stopped first. f never runs inside AfterFunc: its caller may hold a
	// lock that f takes.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer arms a timer that sends the time on the returned channel
	// (of capacity 1) once d has passed, unless it is stopped first: the
	// clock's time.NewTimer.
	NewTimer(d time.Duration) (Timer, <-chan time.Time)
	// NewTicker sends the time on the returned channel (of capacity 1)
	// every d (above zero) until it is stopped, dropping the ticks its
	// reader is late for: the clock's time.NewTicker.
	NewTicker(d time.Duration) (Ticker, <-chan time.Time)
}

// Timer is an armed AfterFunc or NewTimer.
type Timer interface {
	// Stop prevents the call (or the send); it reports false when the
	// call has been made or the timer stopped already.
	Stop() bool
	// Reset arms the timer again to go off d from now; it reports
	// whether the timer was armed.
	Reset(d time.Duration) bool
}

// Ticker is a running NewTicker.
type Ticker interface {
	// Stop ends the ticks; none is sent after it returns.
	Stop()
	// Reset makes the ticker tick every d from now.
	Reset(d time.Duration)
}

// System is the real clock: time.Now, time.AfterFunc and so on.
var System Clock = system{}

// Or is c, or System when c is nil: what a package calls on the Clock it
// was given, so that an unset one means the real clock.
func Or(c Clock) Clock {
	if c == nil {
		return System
	}
	return c
}

// Sleep waits d on c (System when c is nil), or until ctx ends, whose
// error it then returns. A d of zero or less returns at once (nil unless
// ctx has ended).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t, ch := Or(c).NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type system struct{}

func (system) Now() time.Time { return time.Now() }

func (system) Since(t time.Time) time.Duration { return time.Since(t) }

func (system) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func (system) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

func (system) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	t := time.NewTicker(d)
	return t, t.C
}
