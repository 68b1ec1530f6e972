package service

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A stage's store call is tried again while it fails transiently, up to
// one try per pause; a lasting failure is returned at once, and the end
// of the event's context stops the tries.
func TestStoreRetry(t *testing.T) {
	transient := fmt.Errorf("get thread: %w", driver.ErrBadConn)
	lasting := errors.New("no such table: threads")
	r := storeRetry{pauses: []time.Duration{0, time.Millisecond, time.Millisecond}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, tt := range []struct {
		name      string
		fails     []error // the errors of the first tries; then success
		wantCalls int
		wantErr   error
	}{
		{"success", nil, 1, nil},
		{"transient once", []error{transient}, 2, nil},
		{"transient three times", []error{transient, transient, transient}, 4, nil},
		{"transient past the pauses", []error{transient, transient, transient, transient}, 4, transient},
		{"lasting", []error{lasting}, 1, lasting},
		{"transient then lasting", []error{transient, lasting}, 2, lasting},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := r.do(t.Context(), "op", func() error {
				calls++
				if calls <= len(tt.fails) {
					return tt.fails[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("%d calls, err %v; want %d calls, err %v", calls, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
	t.Run("context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		slow := storeRetry{pauses: []time.Duration{time.Hour}, log: r.log}
		err := slow.do(ctx, "op", func() error {
			calls++
			cancel()
			return transient
		})
		if calls != 1 || !errors.Is(err, transient) {
			t.Errorf("%d calls, err %v; want 1 call and the store's error", calls, err)
		}
	})
}

// The retried adapters retry what is safe twice, and MarkEvent is not
// among it.
func TestRetrySeenLeavesMarkEventAlone(t *testing.T) {
	seen := &countingSeen{err: driver.ErrBadConn}
	s := retrySeen{seen, storeRetry{pauses: []time.Duration{0, 0}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	if _, err := s.EventSeen(t.Context(), "k"); err == nil || seen.seenCalls != 3 {
		t.Errorf("EventSeen: %d calls, err %v; want 3 calls", seen.seenCalls, err)
	}
	if _, err := s.MarkEvent(t.Context(), "k"); err == nil || seen.markCalls != 1 {
		t.Errorf("MarkEvent: %d calls, err %v; want 1 call", seen.markCalls, err)
	}
}

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
