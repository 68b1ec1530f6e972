// Package clock is the runtime's one source of time for code that waits:
// the [Clock] interface, which a package takes where it arms a timer, and
// [System], the real clock. Tests pass a clock that moves only when told
// (internal/fake's Clock), so that what a timer does is tested without
// waiting for it, and what it must not do without sleeping.
//
// Code that only reads the time takes a func() time.Time (a Clock's Now
// method value serves).
package clock
