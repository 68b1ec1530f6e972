package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A thread message settles until AGENT_ORDER_SETTLE after its receipt, and not
// again; what has no place in a thread's order, or was received long ago,
// goes at once; shutdown ends the wait.
func TestSettle(t *testing.T) {
	const orderSettle = 50 * time.Millisecond
	msg := func(received time.Time) *pipeline.Event {
		return &pipeline.Event{ID: "Ev1", Kind: pipeline.KindMessage, ChannelID: "D1", TS: "1.000100", Received: received}
	}
	ev := msg(time.Now())
	if err := settle(t.Context(), ev, orderSettle); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(ev.Received); waited < orderSettle {
		t.Errorf("settled %v after its receipt, want at least %v", waited, orderSettle)
	}

	// None of these waits: under a done context, a wait would end at
	// once with its error.
	for name, ev := range map[string]*pipeline.Event{
		"received long ago": msg(time.Now().Add(-time.Minute)),
		"resumed":           {ID: "Ev2", Kind: pipeline.KindMessage, ChannelID: "D1", TS: "1.000200", Received: time.Now(), Resumed: true},
		"a slash command":   {ID: "Ev3", Kind: pipeline.KindCommand, ChannelID: "D1", Received: time.Now()},
	} {
		done, cancel := context.WithCancel(t.Context())
		cancel()
		if err := settle(done, ev, orderSettle); err != nil {
			t.Errorf("%s: settle = %v, want no wait", name, err)
		}
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if err := settle(done, msg(time.Now()), orderSettle); !errors.Is(err, context.Canceled) {
		t.Errorf("settle at shutdown = %v, want context.Canceled", err)
	}
}
