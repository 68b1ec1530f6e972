package runner

import (
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// ClockStart is where a simulation's clock starts: a fixed time, so that
// the times a transcript shows are the same on every run.
var ClockStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// newSimClock is the simulation's clock: it moves only when a step says
// (advance), firing the timers it passes, in the mover's goroutine.
func newSimClock() *clock.Manual { return clock.NewManual(ClockStart) }
