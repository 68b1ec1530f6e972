package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// chanTransport delivers the events written to its channel.
type chanTransport struct {
	events chan *pipeline.Event
}

func (c *chanTransport) Run(ctx context.Context, deliver func(*pipeline.Event)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-c.events:
			deliver(ev)
		}
	}
}

func newTestGateway(t *testing.T, h pipeline.HandlerFunc, cfg Config) (*chanTransport, context.CancelFunc, chan error) {
	t.Helper()
	tr := &chanTransport{events: make(chan *pipeline.Event)}
	g := New(tr, h, noop.NewTracerProvider().Tracer(""), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return tr, cancel, done
}

func message(id, channel, ts, thread string) *pipeline.Event {
	return &pipeline.Event{ID: id, Kind: pipeline.KindMessage, ChannelID: channel, TS: ts, ThreadTS: thread}
}

func TestGatewayOrdersEventsOfOneThread(t *testing.T) {
	var mu sync.Mutex
	var order []string
	release := make(chan struct{})
	seen := make(chan string, 10)
	tr, _, _ := newTestGateway(t, func(ctx context.Context, ev *pipeline.Event) error {
		if ev.ID == "a1" {
			<-release // the first event of thread A is slow
		}
		mu.Lock()
		order = append(order, ev.ID)
		mu.Unlock()
		seen <- ev.ID
		return nil
	}, Config{})
	tr.events <- message("a1", "C1", "1.0", "")
	tr.events <- message("a2", "C1", "1.1", "1.0")
	tr.events <- message("b1", "C1", "2.0", "") // another thread runs meanwhile
	if got := waitID(t, seen); got != "b1" {
		t.Fatalf("first handled %q, want b1 (thread B must not wait for thread A)", got)
	}
	close(release)
	if a, b := waitID(t, seen), waitID(t, seen); a != "a1" || b != "a2" {
		t.Fatalf("thread A handled %s, %s; want a1, a2 in order", a, b)
	}
}

func TestGatewayClicksDoNotWaitBehindTheirThread(t *testing.T) {
	clicked := make(chan struct{})
	seen := make(chan string, 10)
	tr, _, _ := newTestGateway(t, func(ctx context.Context, ev *pipeline.Event) error {
		switch ev.Kind {
		case pipeline.KindMessage:
			if ev.Text == "turn" {
				<-clicked // a turn waiting for an approval click
			} else {
				close(clicked) // the thread's /abort
			}
		case pipeline.KindAction:
			seen <- "click"
		}
		return nil
	}, Config{Self: func() pipeline.Identity { return pipeline.Identity{UserID: "U0BOT"} }})
	turn := message("m1", "C1", "1.0", "")
	turn.Text = "turn"
	tr.events <- turn
	tr.events <- &pipeline.Event{ID: "action:T1", Kind: pipeline.KindAction, ChannelID: "C1", ThreadTS: "1.0", Action: &pipeline.Action{ActionID: "approve"}}
	if got := waitID(t, seen); got != "click" {
		t.Fatalf("got %q", got)
	}
	abort := message("m2", "C1", "1.1", "1.0")
	abort.Text = "<@U0BOT> /abort"
	tr.events <- abort
	select {
	case <-clicked:
	case <-time.After(10 * time.Second):
		t.Fatal("the thread's /abort waited behind the running turn")
	}
}

// A worker whose thread's queue ran dry waits for the next thread's queue
// (its stack already grown), and a waiting worker ends with the gateway.
func TestGatewayReusesWaitingWorker(t *testing.T) {
	seen := make(chan string, 10)
	tr := &chanTransport{events: make(chan *pipeline.Event)}
	g := New(tr, pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
		var buf [64]byte
		id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine "), " ")
		seen <- id
		return nil
	}), noop.NewTracerProvider().Tracer(""), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	waiting := func(n int) {
		t.Helper()
		if !fake.Eventually(10*time.Second, func() bool { return g.workers.Waiting() == n }) {
			t.Fatalf("%d workers waiting, want %d", g.workers.Waiting(), n)
		}
	}
	tr.events <- message("a1", "C1", "1.0", "")
	first := waitID(t, seen)
	waiting(1)
	tr.events <- message("b1", "C1", "2.0", "") // another thread
	if second := waitID(t, seen); second != first {
		t.Fatalf("thread B ran on goroutine %s, thread A on %s: the waiting worker was not used", second, first)
	}
	waiting(1)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waiting(0) // the waiting worker ends with the gateway
}

func TestGatewayDrainsOnShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		release := make(chan struct{})
		finished := make(chan struct{})
		tr, cancel, done := newTestGateway(t, func(ctx context.Context, ev *pipeline.Event) error {
			close(started)
			<-release // a turn still running at shutdown
			close(finished)
			return nil
		}, Config{Grace: 10 * time.Second})
		tr.events <- message("m1", "C1", "1.0", "")
		<-started
		cancel()
		synctest.Wait() // Run has returned, or it waits for the turn
		select {
		case err := <-done:
			close(release)
			done <- err // for the cleanup
			t.Fatalf("Run returned (%v) before the running event finished", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		select {
		case <-finished:
		default:
			t.Fatal("Run returned before the running event finished")
		}
		done <- nil // for the cleanup
	})
}

func TestGatewayCancelsAfterGrace(t *testing.T) {
	started := make(chan struct{})
	tr, cancel, done := newTestGateway(t, func(ctx context.Context, ev *pipeline.Event) error {
		close(started)
		<-ctx.Done() // a turn that only stops when cancelled
		return ctx.Err()
	}, Config{Grace: time.Millisecond})
	tr.events <- message("m1", "C1", "1.0", "")
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running event was not cancelled after the grace period")
	}
	done <- nil
}

// The grace period runs on the gateway's clock: a running event is
// cancelled when that clock passes it, and not before.
func TestGatewayGraceOnItsClock(t *testing.T) {
	clk := fake.NewClock(time.Time{})
	started := make(chan struct{})
	tr, cancel, done := newTestGateway(t, func(ctx context.Context, ev *pipeline.Event) error {
		close(started)
		<-ctx.Done() // a turn that only stops when cancelled
		return ctx.Err()
	}, Config{Grace: time.Hour, Clock: clk})
	tr.events <- message("m1", "C1", "1.0", "")
	<-started
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for clk.Timers() == 0 { // the drain has armed its grace period
		if time.Now().After(deadline) {
			t.Fatal("the drain armed no grace period on the gateway's clock")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Advance(time.Hour - time.Second)
	select {
	case err := <-done:
		done <- err
		t.Fatalf("Run returned (%v) before the grace period was over on its clock", err)
	default:
	}
	clk.Advance(time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running event was not cancelled once the clock passed the grace period")
	}
	done <- nil
}

func TestGatewayReturnsTransportError(t *testing.T) {
	want := errors.New("invalid_auth")
	g := New(transportFunc(func(context.Context, func(*pipeline.Event)) error { return want }),
		pipeline.HandlerFunc(func(context.Context, *pipeline.Event) error { return nil }),
		noop.NewTracerProvider().Tracer(""), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Config{})
	if err := g.Run(context.Background()); !errors.Is(err, want) {
		t.Fatalf("err = %v", err)
	}
}

type transportFunc func(context.Context, func(*pipeline.Event)) error

func (f transportFunc) Run(ctx context.Context, d func(*pipeline.Event)) error { return f(ctx, d) }

func waitID(t *testing.T, ch chan string) string {
	t.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("no event handled")
		return ""
	}
}

// Halt cancels a running event at once, whatever the grace period.
func TestGatewayHaltCancelsAtOnce(t *testing.T) {
	started, stopped := make(chan struct{}), make(chan error, 1)
	tr := &chanTransport{events: make(chan *pipeline.Event)}
	g := New(tr, pipeline.HandlerFunc(func(ctx context.Context, ev *pipeline.Event) error {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return ctx.Err()
	}), noop.NewTracerProvider().Tracer(""), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Config{Grace: time.Hour})
	g.Halt() // before Run: nothing to cancel, no panic
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	tr.events <- message("m1", "C1", "1.0", "")
	<-started
	g.Halt()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the event ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Halt did not cancel the running event")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
