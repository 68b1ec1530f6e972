package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/gopool"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Config tunes the dispatcher.
type Config struct {
	// EventTimeout bounds the handling of one event, approvals included.
	EventTimeout time.Duration
	// Grace is how long running events may finish after shutdown begins.
	Grace time.Duration
	// MaxPending bounds the events queued across all threads; past it new
	// events are refused with an error log and counted as overflow.
	MaxPending int
	// OnHandled, when set, is called after each event was handled, with
	// the chain's error (the simulator waits on it).
	OnHandled func(ev *pipeline.Event, err error)
	// Inbox, when set, makes every message and command durable from
	// before its acknowledgement to its answer (internal/inbox).
	Inbox Inbox
	// OnStart, when set, runs once the gateway takes events, with its
	// Deliver (the service resumes what a crash left unfinished).
	OnStart func(deliver func(*pipeline.Event))
	// LockThread, when set, is held around each thread message's handling:
	// with replicas, it orders a thread's events across processes. It
	// returns ErrYield when an older event of the thread is (or is about to
	// be) queued here: the event goes back to the end of its queue. Any
	// other error but the end of ctx is logged and the event runs all the
	// same: an answer out of order beats none.
	LockThread func(ctx context.Context, ev *pipeline.Event) (unlock func(), err error)
	// Self, when set, is the bot's identity: a message that mentions the
	// bot before /abort is an /abort too (without it, only the bare
	// command is).
	Self func() pipeline.Identity
	// Clock is what the shutdown's grace period and a yielded event's
	// pause run on; nil means clock.System. (EventTimeout bounds the real
	// work of one event: it stays on the real clock.)
	Clock clock.Clock
}

// ErrYield is LockThread's answer for an event that must let an older one
// of its thread run first.
var ErrYield = errors.New("an older event of the thread goes first")

// yieldPause is how long a thread's queue waits after an event yielded,
// for the older one to arrive.
const yieldPause = 20 * time.Millisecond

// A worker whose queue ran dry waits this long for another thread's queue,
// at most maxIdleWorkers of them at once (see gopool).
const (
	idleWorkerWait = 2 * time.Second
	maxIdleWorkers = 4
)

// Inbox records the life of each event it keeps (a person's message or
// slash command), from before its acknowledgement to its end.
type Inbox interface {
	// Receive records ev as received, when the inbox keeps it. The
	// transport calls it, through Deliver, before it acknowledges the
	// envelope. fresh is false when the event was recorded before (a
	// redelivery, here or at another replica sharing the store): that copy
	// is not run, the first one is.
	Receive(ctx context.Context, ev *pipeline.Event) (fresh bool, err error)
	// Begin records that ev runs (another attempt) under traceID, and
	// returns the context to run it in and end, to call once the chain is
	// done with it, with the chain's error; halted is whether shutdown cut
	// the run short.
	Begin(ctx context.Context, ev *pipeline.Event, traceID string) (_ context.Context, end func(err error, halted bool))
}

func (c *Config) defaults() {
	if c.EventTimeout <= 0 {
		c.EventTimeout = 30 * time.Minute
	}
	if c.Grace <= 0 {
		c.Grace = 30 * time.Second
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 10000
	}
	c.Clock = clock.Or(c.Clock)
}

// Gateway takes events from a Transport and runs each through the pipeline.
// Events of one thread are handled one at a time, in arrival order; different
// threads run concurrently (the agent caps concurrent turns itself).
type Gateway struct {
	transport Transport
	handler   pipeline.Handler
	tracer    trace.Tracer
	log       *slog.Logger
	events    *prometheus.CounterVec // kind, outcome
	cfg       Config

	mu      sync.Mutex
	queues  map[string][]*pipeline.Event
	pending int
	closed  bool
	workers *gopool.Pool
	wg      sync.WaitGroup // the running events' workers
	base    context.Context
	cancel  context.CancelFunc
}

// New returns a Gateway. events is agent_events_total{kind,outcome} (may be nil).
func New(t Transport, h pipeline.Handler, tracer trace.Tracer, log *slog.Logger, events *prometheus.CounterVec, cfg Config) *Gateway {
	if t == nil || h == nil || tracer == nil || log == nil {
		panic("gateway: New needs a transport, a handler, a tracer and a logger")
	}
	cfg.defaults()
	return &Gateway{transport: t, handler: h, tracer: tracer, log: log, events: events, cfg: cfg,
		queues: map[string][]*pipeline.Event{}, workers: gopool.New(maxIdleWorkers, idleWorkerWait)}
}

// Run runs the transport until ctx is done, then stops taking events and
// lets the running ones finish within the grace period before cancelling
// them. It returns the transport's error, if any.
func (g *Gateway) Run(ctx context.Context) error {
	g.mu.Lock()
	g.base, g.cancel = context.WithCancel(context.WithoutCancel(ctx))
	g.mu.Unlock()
	defer g.cancel()
	if g.cfg.OnStart != nil {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.cfg.OnStart(g.Deliver)
		}()
	}
	err := g.transport.Run(ctx, g.Deliver)
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.workers.Close()
	g.drain()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Halt cancels the running events at once, without the grace period: the
// replica lost what let it run them (its locks), and another takes them
// over; a turn that went on could answer a second time.
func (g *Gateway) Halt() {
	g.mu.Lock()
	cancel := g.cancel
	g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// drain waits for the running events, cancelling them after the grace period.
func (g *Gateway) drain() {
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }()
	grace, over := g.cfg.Clock.NewTimer(g.cfg.Grace)
	defer grace.Stop()
	select {
	case <-done:
		return
	case <-over:
		g.log.Warn("shutdown grace period over, cancelling running events", "grace", g.cfg.Grace.String())
		g.cancel()
	}
	<-done
}

// Deliver records an event in the inbox, then queues it; the transport
// calls it before acknowledging the envelope, so that an acknowledged
// event is never lost. Apart from that one small write it never blocks.
func (g *Gateway) Deliver(ev *pipeline.Event) {
	if g.cfg.Inbox != nil {
		fresh, err := g.cfg.Inbox.Receive(g.baseContext(), ev)
		switch {
		case err != nil:
			// Handled all the same: only a crash before the answer would
			// lose it now.
			g.log.Error("inbox: event not recorded", "event_id", ev.ID, "err", err)
		case !fresh:
			// The inbox has it: whoever recorded it runs it. This copy
			// goes down the chain only to be dropped (and counted) as
			// a duplicate, without touching the first one's record.
			ev.Redelivery = true
		}
	}
	key := g.queueKey(ev)
	g.mu.Lock()
	if g.closed || g.base == nil {
		g.mu.Unlock()
		g.count(ev, "refused")
		g.log.Warn("event refused: gateway is not running", "event_id", ev.ID, "kind", ev.Kind.String())
		return
	}
	if g.pending >= g.cfg.MaxPending {
		g.mu.Unlock()
		g.count(ev, "overflow")
		g.log.Error("event refused: too many events pending", "event_id", ev.ID, "pending", g.cfg.MaxPending)
		return
	}
	g.pending++
	q, running := g.queues[key]
	g.queues[key] = append(q, ev)
	if !running {
		g.wg.Add(1)
		g.workers.Go(func() {
			defer g.wg.Done()
			g.drainQueue(key)
		})
	}
	g.mu.Unlock()
}

// queueKey is the key that orders events: the thread for messages. The
// kinds that run apart (Kind.Apart: clicks, slash commands) and a thread's
// /abort get a queue of their own: they must not wait behind the thread's
// running turn (which may itself be waiting for that very click).
func (g *Gateway) queueKey(ev *pipeline.Event) string {
	switch {
	case ev.Kind.Apart():
		return ev.Kind.String() + ":" + ev.ID
	case ev.Kind == pipeline.KindMessage && g.isAbort(ev.Text):
		return "abort:" + ev.ID
	}
	return ev.ThreadKey()
}

// isAbort reports whether a message is the /abort command, read as the
// commands read it (pipeline.ParseCommand: any case, the bot's mention
// anywhere), so that no spelling of it waits behind the turn it is meant
// to stop. Queueing it apart grants nothing: who may stop the turn is
// checked when the command runs, down the chain.
func (g *Gateway) isAbort(text string) bool {
	var bot string
	if g.cfg.Self != nil {
		bot = g.cfg.Self().UserID
	}
	c, ok := pipeline.ParseCommand(text, bot)
	return ok && c.Name == "/abort"
}

// drainQueue handles the events of one thread in order until its queue is
// empty.
func (g *Gateway) drainQueue(key string) {
	for {
		g.mu.Lock()
		q := g.queues[key]
		if len(q) == 0 {
			delete(g.queues, key)
			g.mu.Unlock()
			return
		}
		ev := q[0]
		g.queues[key] = q[1:]
		g.mu.Unlock()

		yielded := g.handle(ev)

		g.mu.Lock()
		if yielded {
			g.queues[key] = append(g.queues[key], ev)
		} else {
			g.pending--
		}
		g.mu.Unlock()
		if yielded {
			clock.Sleep(g.base, g.cfg.Clock, yieldPause)
		}
	}
}

// baseContext is the context events run under, or Background before Run.
func (g *Gateway) baseContext() context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.base == nil {
		return context.Background()
	}
	return g.base
}

// handle runs one event through the chain; yielded reports that it went
// back to its queue instead (ErrYield).
func (g *Gateway) handle(ev *pipeline.Event) (yielded bool) {
	ctx, cancel := context.WithTimeout(g.base, g.cfg.EventTimeout)
	defer cancel()
	ctx, span := g.tracer.Start(ctx, "chat.event", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("event_id", ev.ID), attribute.String("kind", ev.Kind.String()),
			attribute.String("channel_id", ev.ChannelID), attribute.Bool("resumed", ev.Resumed),
			attribute.String("messaging.system", "slack"), attribute.String("messaging.operation.type", operationType(ev)),
			attribute.String("messaging.destination.name", ev.ChannelID), attribute.String("messaging.message.id", ev.ID)))
	defer span.End()
	// Bots' messages (the runtime's own posts coming back) are dropped
	// whatever order they run in: no lock for them.
	if g.cfg.LockThread != nil && ev.Kind == pipeline.KindMessage && ev.BotID == "" && !ev.Redelivery && g.queueKey(ev) == ev.ThreadKey() {
		unlock, err := g.cfg.LockThread(ctx, ev)
		switch {
		case err == nil:
			defer unlock()
		case errors.Is(err, ErrYield) && ctx.Err() == nil:
			span.SetAttributes(attribute.Bool("yielded", true))
			return true
		case ctx.Err() != nil:
			// Shutdown before its turn: left to the replica that takes
			// this one's events over.
			g.count(ev, "cancelled")
			g.log.InfoContext(ctx, "event handed back: shutting down before its turn", "event_id", ev.ID)
			return false
		default:
			g.log.ErrorContext(ctx, "thread lock not taken; running the event unordered", "event_id", ev.ID, "err", err)
		}
	}
	end := func(error, bool) {}
	if g.cfg.Inbox != nil {
		ctx, end = g.cfg.Inbox.Begin(ctx, ev, span.SpanContext().TraceID().String())
	}
	err := g.handler.Handle(ctx, ev)
	if g.cfg.OnHandled != nil {
		defer g.cfg.OnHandled(ev, err)
	}
	cancelled := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	end(err, cancelled && g.base.Err() != nil)
	switch {
	case err == nil:
		g.count(ev, "handled")
	case cancelled:
		g.count(ev, "cancelled")
		g.log.InfoContext(ctx, "event cancelled", "event_id", ev.ID, "kind", ev.Kind.String(), "channel_id", ev.ChannelID, "reason", err.Error())
	default:
		g.count(ev, "error")
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		attrs := []any{"event_id", ev.ID, "kind", ev.Kind.String(), "channel_id", ev.ChannelID, "user_id", ev.UserID, "err", err}
		var pe *pipeline.PanicError
		if errors.As(err, &pe) {
			attrs = append(attrs, "stack", string(pe.Stack))
		}
		g.log.ErrorContext(ctx, "event failed", attrs...)
	}
	return false
}

func (g *Gateway) count(ev *pipeline.Event, outcome string) {
	if g.events != nil {
		g.events.WithLabelValues(ev.Kind.String(), outcome).Inc()
	}
}

// operationType is the chat.event span's messaging.operation.type: a
// scheduled run is the runtime's own (schedule), every other event is
// processed as it came (process).
func operationType(ev *pipeline.Event) string {
	if ev.Kind == pipeline.KindSchedule {
		return "schedule"
	}
	return "process"
}
