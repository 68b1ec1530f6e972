package main

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

// Which failed events are told: what was said to the persona, and what
// got past the engagement rules; not a plain thread reply whose
// engagement could not be read.
func TestAddressed(t *testing.T) {
	msg := func(channel, thread, text string) *pipeline.Event {
		return &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", ChannelID: channel, TS: "2.0", ThreadTS: thread, Text: text}
	}
	for _, tt := range []struct {
		name  string
		ev    *pipeline.Event
		stage string
		want  bool
	}{
		{"DM, drop failed", msg("D1", "", "hi"), "drop", true},
		{"command", &pipeline.Event{Kind: pipeline.KindCommand, ChannelID: "C1"}, "auth", true},
		{"app_mention", &pipeline.Event{Kind: pipeline.KindMessage, Type: "app_mention", ChannelID: "C1"}, "engage", true},
		{"mention in the text", msg("C1", "1.0", "<@U0BOT> hi"), "drop", true},
		{"mention with a name", msg("C1", "1.0", "<@U0BOT|bot> hi"), "engage", true},
		{"another id that starts alike", msg("C1", "1.0", "<@U0BOTX> hi"), "engage", false},
		{"thread reply, engagement unknown", msg("C1", "1.0", "plain words"), "engage", false},
		{"thread reply, lock unknown", msg("C1", "1.0", "plain words"), "drop", false},
		{"thread reply past engagement", msg("C1", "1.0", "plain words"), "auth", true},
		{"thread reply, session failed", msg("C1", "1.0", "plain words"), "session", true},
		{"thread reply, failure of unknown place", msg("C1", "1.0", "plain words"), "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := addressed(tt.ev, "U0BOT", tt.stage); got != tt.want {
				t.Errorf("addressed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToldSet(t *testing.T) {
	var s toldSet
	if !s.first("C1:1.0") || s.first("C1:1.0") {
		t.Fatal("a key is first once")
	}
	for i := range toldMax {
		s.first(fmt.Sprint(i))
	}
	if !s.first("C1:1.0") {
		t.Error("the oldest key was not forgotten")
	}
	if len(s.order) != toldMax || len(s.keys) != toldMax {
		t.Errorf("%d keys in order, %d in the map; want %d", len(s.order), len(s.keys), toldMax)
	}
}
