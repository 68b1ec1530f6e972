package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// recordingInbox keeps each event's life as "receive begin end" and so
// on; what the inbox does with each step is internal/inbox's (tested
// there).
type recordingInbox struct {
	mu    sync.Mutex
	steps map[string][]string
	done  chan string // event ids as they end
}

func newRecordingInbox() *recordingInbox {
	return &recordingInbox{steps: map[string][]string{}, done: make(chan string, 16)}
}

func (r *recordingInbox) add(id, step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps[id] = append(r.steps[id], step)
}

func (r *recordingInbox) Receive(_ context.Context, ev *pipeline.Event) (bool, error) {
	r.mu.Lock()
	fresh := len(r.steps[ev.ID]) == 0
	r.mu.Unlock()
	r.add(ev.ID, "receive")
	return fresh, nil
}

func (r *recordingInbox) Begin(ctx context.Context, ev *pipeline.Event, traceID string) (context.Context, func(error, bool)) {
	step := "begin"
	if traceID == "" {
		step += "(no trace)"
	}
	r.add(ev.ID, step)
	return ctx, func(err error, halted bool) {
		step := "end"
		if err != nil {
			step += "(" + err.Error() + ")"
		}
		if halted {
			step += " halted"
		}
		r.add(ev.ID, step)
		r.done <- ev.ID
	}
}

func (r *recordingInbox) life(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.steps[id], " ")
}

// The gateway walks each event through the inbox: received before it is
// queued, begun before the handler sees it (under the event's trace), and
// ended with the chain's error once the handler is done; a copy the inbox
// recorded before goes down the chain as a redelivery.
func TestGatewayWalksEachEventThroughTheInbox(t *testing.T) {
	inbox := newRecordingInbox()
	var mu sync.Mutex
	seen := map[string]string{} // id: life when the handler ran, redelivered
	h := pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
		mu.Lock()
		seen[ev.ID] = inbox.life(ev.ID)
		if ev.Redelivery {
			seen[ev.ID] += " (redelivery)"
		}
		mu.Unlock()
		if ev.Text == "fail" {
			return errors.New("model down")
		}
		return nil
	})
	tr, _, _ := newTestGateway(t, h, Config{Inbox: inbox})
	send := func(id, text string) {
		ev := message(id, "D1", id+".1", "")
		ev.Text = text
		tr.events <- ev
		waitID(t, inbox.done)
	}
	send("E1", "answer")
	send("E2", "fail")
	send("E1", "answer") // the platform's retry
	mu.Lock()
	defer mu.Unlock()
	for id, want := range map[string]string{
		"E1": "receive begin end receive begin end",
		"E2": "receive begin end(model down)",
	} {
		if got := inbox.life(id); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if got, want := seen["E1"], "receive begin end receive begin (redelivery)"; got != want {
		t.Errorf("the retry of E1 was handled after %q, want %q", got, want)
	}
	if got, want := seen["E2"], "receive begin"; got != want {
		t.Errorf("E2 was handled after %q, want %q", got, want)
	}
}

// A turn cut short by shutdown ends halted: the inbox leaves it running,
// for the next start to resume it.
func TestGatewayLeavesAShutdownTurnRunning(t *testing.T) {
	inbox := newRecordingInbox()
	started := make(chan struct{})
	h := pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
		if ev.Text == "fail" {
			return &pipeline.StageError{Stage: "engage", Err: errors.New("database is locked")}
		}
		close(started)
		<-ctx.Done()
		return &pipeline.StageError{Stage: "session", Err: ctx.Err()}
	})
	tr := &chanTransport{events: make(chan *pipeline.Event)}
	g := New(tr, h, noop.NewTracerProvider().Tracer(""), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Config{Inbox: inbox, Grace: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	ev := message("E1", "D1", "1.1", "")
	ev.Text = "fail"
	tr.events <- ev
	waitID(t, inbox.done)
	tr.events <- message("E2", "D1", "2.1", "")
	<-started
	cancel()
	<-done
	if got, want := inbox.life("E1"), "receive begin end(engage: database is locked)"; got != want {
		t.Errorf("E1: %q, want %q", got, want)
	}
	if got, want := inbox.life("E2"), "receive begin end(session: context canceled) halted"; got != want {
		t.Errorf("E2: %q, want %q", got, want)
	}
}
