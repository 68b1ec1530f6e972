package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A stage's store call is tried again while it fails transiently, up to
// one try per pause, each pause waited on the policy's clock; a lasting
// failure is returned at once.
func TestRetry(t *testing.T) {
	transient := fmt.Errorf("get thread: %w", driver.ErrBadConn)
	lasting := errors.New("no such table: threads")
	pauses := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	for _, tt := range []struct {
		name       string
		fails      []error // the errors of the first tries; then success
		wantCalls  int
		wantErr    error
		wantPauses []time.Duration
	}{
		{"success", nil, 1, nil, nil},
		{"transient once", []error{transient}, 2, nil, pauses[:1]},
		{"transient three times", []error{transient, transient, transient}, 4, nil, pauses},
		{"transient past the pauses", []error{transient, transient, transient, transient}, 4, transient, pauses},
		{"lasting", []error{lasting}, 1, lasting, nil},
		{"transient then lasting", []error{transient, lasting}, 2, lasting, pauses[:1]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := &instantClock{}
			r := Retry{Pauses: pauses, Log: discard(), Clock: clk}
			calls := 0
			err := r.Do(t.Context(), "op", func() error {
				calls++
				if calls <= len(tt.fails) {
					return tt.fails[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("%d calls, err %v; want %d calls, err %v", calls, err, tt.wantCalls, tt.wantErr)
			}
			if got := clk.waited(); !slices.Equal(got, tt.wantPauses) {
				t.Errorf("paused %v, want %v", got, tt.wantPauses)
			}
		})
	}
	t.Run("context ends", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		// The manual clock never moves: only the context ends the pause.
		slow := Retry{Pauses: []time.Duration{time.Hour}, Clock: clock.NewManual(time.Time{})}
		err := slow.Do(ctx, "op", func() error {
			calls++
			cancel()
			return transient
		})
		if calls != 1 || !errors.Is(err, transient) {
			t.Errorf("%d calls, err %v; want 1 call and the store's error", calls, err)
		}
	})
	t.Run("no pauses", func(t *testing.T) {
		t.Parallel()
		calls := 0
		err := Retry{Pauses: []time.Duration{}}.Do(t.Context(), "op", func() error { calls++; return transient })
		if calls != 1 || !errors.Is(err, transient) {
			t.Errorf("%d calls, err %v; want 1 call", calls, err)
		}
	})
}

// The fault hook is asked before each try with the call's name; its error
// is the try's, retried like the store's own.
func TestRetryFault(t *testing.T) {
	t.Parallel()
	var ops []string
	faults := 2
	clk := &instantClock{}
	r := Retry{Pauses: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}, Clock: clk,
		Fault: func(op string) error {
			ops = append(ops, op)
			if faults > 0 {
				faults--
				return driver.ErrBadConn
			}
			return nil
		}}
	calls := 0
	if err := r.Do(t.Context(), "thread_mode", func() error { calls++; return nil }); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || !slices.Equal(ops, []string{"thread_mode", "thread_mode", "thread_mode"}) {
		t.Errorf("the call ran %d times after faults asked for %v; want once after three asks", calls, ops)
	}
	if n := len(clk.waited()); n != 2 {
		t.Errorf("%d pauses, want 2", n)
	}
}

// The retried adapters retry what is safe twice, and MarkEvent is not
// among it.
func TestRetrySeenLeavesMarkEventAlone(t *testing.T) {
	t.Parallel()
	seen := &countingSeen{err: driver.ErrBadConn}
	s := RetrySeen{seen, Retry{Pauses: []time.Duration{time.Second, time.Second}, Log: discard(), Clock: &instantClock{}}}
	if _, err := s.EventSeen(t.Context(), "k"); err == nil || seen.seenCalls != 3 {
		t.Errorf("EventSeen: %d calls, err %v; want 3 calls", seen.seenCalls, err)
	}
	if _, err := s.MarkEvent(t.Context(), "k"); err == nil || seen.markCalls != 1 {
		t.Errorf("MarkEvent: %d calls, err %v; want 1 call", seen.markCalls, err)
	}
}

// Each retried call names itself to the fault hook (the names tests fail
// by).
func TestRetryThreadsNamesItsCalls(t *testing.T) {
	t.Parallel()
	var ops []string
	r := Retry{Pauses: []time.Duration{}, Fault: func(op string) error { ops = append(ops, op); return nil }}
	th := RetryThreads{Threads: nopThreads{}, Retry: r}
	ctx := t.Context()
	_, _, _ = th.Engaged(ctx, "k")
	_, _ = th.Engage(ctx, "k", "C", "1", "1")
	_ = th.Disengage(ctx, "k", "1")
	_, _ = th.ThreadMode(ctx, "k")
	_, _ = th.ThreadLock(ctx, "k")
	if want := []string{"engaged", "engage", "disengage", "thread_mode", "thread_lock"}; !slices.Equal(ops, want) {
		t.Errorf("ops %v, want %v", ops, want)
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// instantClock fires every timer at once (in a goroutine of its own, as a
// clock must) and records the durations it was asked to wait.
type instantClock struct {
	clock.Clock // the rest of the interface, never called here
	mu          sync.Mutex
	waits       []time.Duration
}

func (c *instantClock) Now() time.Time { return time.Time{} }

func (c *instantClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	go f()
	return stoppedTimer{}
}

func (c *instantClock) waited() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }

func (stoppedTimer) Reset(time.Duration) bool { return false }

type countingSeen struct {
	err                  error
	seenCalls, markCalls int
}

var _ pipeline.SeenStore = (*countingSeen)(nil)

func (c *countingSeen) EventSeen(context.Context, string) (bool, error) {
	c.seenCalls++
	return false, c.err
}

func (c *countingSeen) MarkEvent(context.Context, string) (bool, error) {
	c.markCalls++
	return false, c.err
}

type nopThreads struct{}

func (nopThreads) Engaged(context.Context, string) (bool, bool, error) { return false, false, nil }
func (nopThreads) Engage(context.Context, string, string, string, string) (string, error) {
	return "", nil
}
func (nopThreads) Disengage(context.Context, string, string) error           { return nil }
func (nopThreads) ThreadMode(context.Context, string) (pipeline.Mode, error) { return "", nil }
func (nopThreads) ThreadLock(context.Context, string) (string, error)        { return "", nil }
