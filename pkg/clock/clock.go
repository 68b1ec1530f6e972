package clock

import "time"

// Clock tells the time and arms timers.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// AfterFunc calls f once d has passed, unless the returned Timer is
	// stopped first. f never runs inside AfterFunc: its caller may hold a
	// lock that f takes.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is an armed AfterFunc.
type Timer interface {
	// Stop prevents the call; it reports false when the call has been
	// made or the timer stopped already.
	Stop() bool
}

// System is the real clock: time.Now and time.AfterFunc.
var System Clock = system{}

type system struct{}

func (system) Now() time.Time { return time.Now() }

func (system) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
