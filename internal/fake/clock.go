package fake

import (
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// ClockStart is where a [NewClock] clock starts.
var ClockStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is the test kit's clock: a [clock.Manual], which moves only when
// told (Advance, Set) and fires the timers it passes in the mover's
// goroutine.
type Clock = clock.Manual

// NewClock returns a Clock standing at start, or at [ClockStart] when start
// is the zero time.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = ClockStart
	}
	return clock.NewManual(start)
}
