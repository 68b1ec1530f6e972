package fake

import (
	"slices"
	"testing"
	"time"
)

// Timers fire during the Advance that reaches them, in the order of their
// times; a stopped one never does; one armed by a firing timer fires in
// the same Advance when it is due by then.
func TestClock(t *testing.T) {
	c := NewClock(time.Time{})
	if !c.Now().Equal(ClockStart) {
		t.Fatalf("Now() = %v, want %v", c.Now(), ClockStart)
	}
	var fired []string
	c.AfterFunc(3*time.Second, func() { fired = append(fired, "3s") })
	c.AfterFunc(time.Second, func() {
		fired = append(fired, "1s")
		c.AfterFunc(time.Second, func() { fired = append(fired, "1s+1s") })
	})
	stopped := c.AfterFunc(2*time.Second, func() { fired = append(fired, "stopped") })
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop of an armed timer is not true once, then false")
	}
	if c.Timers() != 2 {
		t.Errorf("Timers() = %d, want 2", c.Timers())
	}
	c.Advance(999 * time.Millisecond)
	if len(fired) != 0 {
		t.Fatalf("fired %q before their time", fired)
	}
	c.Advance(2 * time.Second)
	if want := []string{"1s", "1s+1s"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %q, want %q", fired, want)
	}
	c.Set(ClockStart) // never back
	if got := c.Now().Sub(ClockStart); got != 2999*time.Millisecond {
		t.Errorf("Set moved the clock back: %v after the start", got)
	}
	c.Advance(time.Millisecond)
	if want := []string{"1s", "1s+1s", "3s"}; !slices.Equal(fired, want) || c.Timers() != 0 {
		t.Errorf("fired %q with %d armed, want %q and none", fired, c.Timers(), want)
	}
}
