package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// recordingInbox keeps each event's life as "receive start answering
// answered" and so on.
type recordingInbox struct {
	mu    sync.Mutex
	steps map[string][]string
	done  chan string // event ids as they are finished
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

func (r *recordingInbox) Start(ctx context.Context, ev *pipeline.Event, traceID string) context.Context {
	r.add(ev.ID, "start")
	return ctx
}

func (r *recordingInbox) Answering(_ context.Context, ev *pipeline.Event) error {
	r.add(ev.ID, "answering")
	return nil
}

func (r *recordingInbox) Finish(_ context.Context, ev *pipeline.Event, state string, cause error) {
	step := state
	if cause != nil {
		step += "(" + cause.Error() + ")"
	}
	r.add(ev.ID, step)
	r.done <- ev.ID
}

func (r *recordingInbox) Answered(ctx context.Context, ev *pipeline.Event) {
	r.Finish(ctx, ev, InboxAnswered, nil)
}

func (r *recordingInbox) Flush(context.Context, *pipeline.Event) {}

func (r *recordingInbox) life(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.steps[id], " ")
}

// The gateway walks each journaled event through the inbox: received
// before the handler sees it, answered at its first post (not at the end
// of the turn), failed with its error, dropped when it never reached the
// agent; clicks and the bot's own events are not journaled, and a
// resumed event is not received twice.
func TestGatewayJournalsEachEventToItsEnd(t *testing.T) {
	inbox := newRecordingInbox()
	posted := make(chan struct{})
	h := pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
		p := pipeline.ProgressFromContext(ctx)
		switch ev.Text {
		case "answer":
			p.Reach()
			p.Answering()
			p.Answer()
			close(posted)
			time.Sleep(20 * time.Millisecond) // the turn goes on after its answer
			return nil
		case "fail":
			p.Reach()
			return errors.New("model down")
		case "silent":
			p.Reach()
			return nil
		}
		return nil // "drop": never reaches the agent
	})
	tr, _, _ := newTestGateway(t, h, Config{Inbox: inbox})
	send := func(id, text string, mod func(*pipeline.Event)) {
		ev := message(id, "D1", id+".1", "")
		ev.Text = text
		if mod != nil {
			mod(ev)
		}
		tr.events <- ev
	}
	send("E1", "answer", nil)
	<-posted
	if got := waitID(t, inbox.done); got != "E1" {
		t.Fatalf("first finished %s", got)
	}
	if got := inbox.life("E1"); got != "receive start answering answered" {
		t.Errorf("E1: %s", got)
	}
	send("E2", "fail", nil)
	send("E3", "silent", nil)
	send("E4", "drop", nil)
	send("E5", "answer", func(ev *pipeline.Event) { ev.Kind = pipeline.KindAction; ev.Text = "drop" })
	send("E6", "drop", func(ev *pipeline.Event) { ev.BotID = "B1" })
	send("E7", "silent", func(ev *pipeline.Event) { ev.Resumed = true })
	var finished []string
	for range 4 {
		finished = append(finished, waitID(t, inbox.done))
	}
	slices.Sort(finished)
	if !slices.Equal(finished, []string{"E2", "E3", "E4", "E7"}) {
		t.Fatalf("finished %v", finished)
	}
	for id, want := range map[string]string{
		"E2": "receive start failed(model down)",
		"E3": "receive start answered",
		"E4": "receive start dropped",
		"E5": "",
		"E6": "",
		"E7": "start answered",
	} {
		if got := inbox.life(id); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
}

// A turn cut short by shutdown stays running: the next start resumes it.
func TestGatewayLeavesAShutdownTurnRunning(t *testing.T) {
	inbox := newRecordingInbox()
	started := make(chan struct{})
	h := pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
		pipeline.ProgressFromContext(ctx).Reach()
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	tr := &chanTransport{events: make(chan *pipeline.Event)}
	g := New(tr, h, noop.NewTracerProvider().Tracer(""), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Config{Inbox: inbox, Grace: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	tr.events <- message("E1", "D1", "1.1", "")
	<-started
	cancel()
	<-done
	if got := inbox.life("E1"); got != "receive start" {
		t.Errorf("E1: %q, want it left running", got)
	}
}

// An event that fails before it reaches the agent stage is told to
// OnFailed (once, before it is recorded failed); one that failed in the
// agent stage (which apologises itself), a drop, and an event cut short by
// shutdown are not.
func TestGatewayTellsFailuresBeforeTheAgent(t *testing.T) {
	inbox := newRecordingInbox()
	storeDown := errors.New("database is locked")
	started := make(chan struct{})
	h := pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
		p := pipeline.ProgressFromContext(ctx)
		switch ev.Text {
		case "stage":
			return &pipeline.StageError{Stage: "engage", Err: storeDown}
		case "agent":
			p.Reach()
			return errors.New("model down")
		case "shutdown":
			close(started)
			<-ctx.Done()
			return &pipeline.StageError{Stage: "session", Err: ctx.Err()}
		}
		return nil
	})
	var mu sync.Mutex
	var told []string
	onFailed := func(_ context.Context, ev *pipeline.Event, err error) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, ev.ID+": "+err.Error()+" (before: "+inbox.life(ev.ID)+")")
	}
	tr := &chanTransport{events: make(chan *pipeline.Event)}
	g := New(tr, h, noop.NewTracerProvider().Tracer(""), slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		Config{Inbox: inbox, OnFailed: onFailed, Grace: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	for i, text := range []string{"stage", "agent", "drop"} {
		ev := message(fmt.Sprintf("E%d", i+1), "D1", fmt.Sprintf("%d.1", i+1), "")
		ev.Text = text
		tr.events <- ev
		waitID(t, inbox.done)
	}
	ev := message("E4", "D1", "4.1", "")
	ev.Text = "shutdown"
	tr.events <- ev
	<-started
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"E1: engage: database is locked (before: receive start)"}; !slices.Equal(told, want) {
		t.Errorf("told %q, want %q", told, want)
	}
	if got := inbox.life("E1"); got != "receive start failed(engage: database is locked)" {
		t.Errorf("E1: %q", got)
	}
}
