package clock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

var start = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func TestOrIsSystemForNil(t *testing.T) {
	if clock.Or(nil) != clock.System {
		t.Fatal("Or(nil) is not System")
	}
	m := clock.NewManual(start)
	if clock.Or(m) != clock.Clock(m) {
		t.Fatal("Or(m) is not m")
	}
}

func TestManualSince(t *testing.T) {
	c := clock.NewManual(start)
	c.Advance(90 * time.Second)
	if got := c.Since(start); got != 90*time.Second {
		t.Fatalf("Since = %v, want 1m30s", got)
	}
}

func TestManualAfterFuncFiresInAdvance(t *testing.T) {
	c := clock.NewManual(start)
	var fired atomic.Int32
	c.AfterFunc(time.Minute, func() { fired.Add(1) })
	c.Advance(59 * time.Second)
	if fired.Load() != 0 {
		t.Fatal("fired before its time")
	}
	c.Advance(time.Second)
	if fired.Load() != 1 {
		t.Fatal("not fired once Advance reached its time")
	}
}

func TestManualTimerSendsAndStops(t *testing.T) {
	c := clock.NewManual(start)
	tm, ch := c.NewTimer(time.Minute)
	c.Advance(time.Minute)
	select {
	case at := <-ch:
		if !at.Equal(start.Add(time.Minute)) {
			t.Fatalf("sent %v, want %v", at, start.Add(time.Minute))
		}
	default:
		t.Fatal("nothing sent once Advance reached its time")
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reported true")
	}

	tm, ch = c.NewTimer(time.Minute)
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer reported false")
	}
	c.Advance(time.Hour)
	select {
	case <-ch:
		t.Fatal("a stopped timer sent")
	default:
	}
	if c.Timers() != 0 {
		t.Fatalf("%d timers left armed", c.Timers())
	}
}

func TestManualTimerReset(t *testing.T) {
	c := clock.NewManual(start)
	tm, ch := c.NewTimer(time.Minute)
	c.Advance(30 * time.Second)
	if !tm.Reset(time.Minute) {
		t.Fatal("Reset of an armed timer reported false")
	}
	c.Advance(59 * time.Second)
	select {
	case <-ch:
		t.Fatal("sent at its old time")
	default:
	}
	c.Advance(time.Second)
	if len(ch) != 1 {
		t.Fatal("not sent at its new time")
	}
	// Reset after firing arms it again, and drops the time not read.
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a fired timer reported true")
	}
	if len(ch) != 0 {
		t.Fatal("Reset kept a stale time")
	}
	c.Advance(time.Second)
	if len(ch) != 1 {
		t.Fatal("a timer reset after firing did not fire again")
	}
}

func TestManualTickerTicksOnItsGrid(t *testing.T) {
	c := clock.NewManual(start)
	tk, ch := c.NewTicker(10 * time.Second)
	c.Advance(9 * time.Second)
	if len(ch) != 0 {
		t.Fatal("ticked early")
	}
	c.Advance(time.Second)
	if at := <-ch; !at.Equal(start.Add(10 * time.Second)) {
		t.Fatalf("ticked at %v, want +10s", at)
	}
	// An advance past many ticks ticks once; the next stays on the grid.
	c.Advance(95 * time.Second) // to +105s
	if at := <-ch; !at.Equal(start.Add(20 * time.Second)) {
		t.Fatalf("ticked at %v, want the first tick passed (+20s)", at)
	}
	if len(ch) != 0 {
		t.Fatal("more than one tick held")
	}
	c.Advance(4 * time.Second)
	if len(ch) != 0 {
		t.Fatal("ticked off the grid")
	}
	c.Advance(time.Second) // +110s
	if at := <-ch; !at.Equal(start.Add(110 * time.Second)) {
		t.Fatalf("ticked at %v, want +110s", at)
	}
	tk.Reset(time.Minute)
	c.Advance(59 * time.Second)
	if len(ch) != 0 {
		t.Fatal("ticked before the reset period")
	}
	c.Advance(time.Second)
	if len(ch) != 1 {
		t.Fatal("no tick after the reset period")
	}
	tk.Stop()
	if len(ch) != 0 {
		t.Fatal("Stop kept a tick")
	}
	c.Advance(time.Hour)
	if len(ch) != 0 || c.Timers() != 0 {
		t.Fatal("a stopped ticker ticked or stayed armed")
	}
}

func TestSleep(t *testing.T) {
	c := clock.NewManual(start)
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(t.Context(), c, time.Minute) }()
	for c.Timers() == 0 { // the sleeper has armed its timer
		time.Sleep(time.Millisecond)
	}
	c.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	go func() { done <- clock.Sleep(ctx, c, time.Minute) }()
	for c.Timers() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep after cancel = %v, want context.Canceled", err)
	}
	if c.Timers() != 0 {
		t.Fatal("Sleep left its timer armed")
	}
	if err := clock.Sleep(t.Context(), nil, 0); err != nil {
		t.Fatalf("Sleep(0) on the nil clock = %v", err)
	}
}

func TestSystemClock(t *testing.T) {
	c := clock.Or(nil)
	tm, ch := c.NewTimer(time.Millisecond)
	<-ch
	tm.Stop()
	tk, tch := c.NewTicker(time.Millisecond)
	<-tch
	tk.Stop()
	if c.Since(c.Now().Add(-time.Hour)) < time.Hour {
		t.Fatal("Since is short")
	}
}
