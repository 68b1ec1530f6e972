// Package clock is the runtime's one source of time for code that waits
// or stamps: the [Clock] interface (Now, Since, AfterFunc, NewTimer,
// NewTicker, after tailscale's tstime), [System], the real clock, and
// [Manual], a clock that moves only when told (the simulator's, and
// internal/fake's Clock in tests), so that what a timer does is tested
// without waiting for it, and what it must not do without sleeping.
//
// A package takes a Clock where it waits or stamps (an option or a field)
// and reads it through [Or]: a nil Clock means System, so that the zero
// value of an options struct runs on the real clock. [Sleep] waits on a
// clock or until a context ends (a retry's back-off, a poll). A function
// that only reads the time may take a func() time.Time (a Clock's Now
// method value serves).
//
// What waits on something outside the process in real time (SQLite's busy
// lock, a socket's read deadline, an HTTP client's timeout) stays on the
// time package: a simulated clock standing still would wait forever.
package clock
