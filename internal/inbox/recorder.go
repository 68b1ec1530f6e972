package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Keep is how long settled events are kept for `agent inbox`.
const Keep = 7 * 24 * time.Hour

// Store is the database the inbox records in (*store.Store).
type Store interface {
	InboxReceiveMark(ctx context.Context, e store.InboxEntry, key string) (fresh, marked bool, err error)
	InboxAnswering(ctx context.Context, eventID string) error
	InboxFinish(ctx context.Context, eventID, state, errText string) error
	OweInboxFinish(ctx context.Context, eventID, state, errText string, written func()) (bool, error)
	Flush(ctx context.Context) error
	InboxUnfinished(ctx context.Context) ([]store.InboxEntry, error)
	InboxAnsweredKey(ctx context.Context, msgKey string) (bool, error)
}

var _ Store = (*store.Store)(nil)

// Chat posts the lines the inbox says in a thread. A Chat that can also
// read a thread back (Delivered) tells a resumed event whose answer was
// being posted whether it landed.
type Chat interface {
	Post(ctx context.Context, m pipeline.Message) (ts string, err error)
}

// Options are a Recorder's dependencies.
type Options struct {
	// Store keeps the records.
	Store Store
	// Chat posts the lines said in a thread: a resumed or given-up event's,
	// a failure's before the agent stage.
	Chat Chat
	// Self is the bot's identity: a message that mentions it was said to
	// the persona (nil: none is known).
	Self func() pipeline.Identity
	// Redact scrubs the copy of an event the inbox keeps, like everything
	// else the runtime stores (nil: kept as it came).
	Redact func(string) string
	// Outcomes is agent_inbox_events_total{outcome} (may be nil).
	Outcomes *prometheus.CounterVec
	// Log is where the inbox reports what it could not record or say
	// (nil: discarded).
	Log *slog.Logger
}

// Recorder is the durable inbox over a Store. It is safe for concurrent
// use.
type Recorder struct {
	o Options
	// told: the messages whose failure before the agent was told.
	told toldSet
}

// New returns the inbox over o.Store; a Store and a Chat are required.
func New(o Options) *Recorder {
	if o.Store == nil || o.Chat == nil {
		panic("inbox: New needs a Store and a Chat")
	}
	if o.Self == nil {
		o.Self = func() pipeline.Identity { return pipeline.Identity{} }
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Recorder{o: o}
}

// kept reports whether ev goes through the inbox: a person's message or
// slash command, or a scheduled run (clicks are answered by the card they
// click, replies are the runtime's own, bots are dropped).
func kept(ev *pipeline.Event) bool {
	switch ev.Kind {
	case pipeline.KindMessage, pipeline.KindCommand, pipeline.KindSchedule:
		return ev.BotID == "" && ev.ID != ""
	}
	return false
}

// MsgKey is channel:ts of a message, "" for a command: a channel mention
// arrives twice, as two events with one key.
func MsgKey(ev *pipeline.Event) string {
	if ev.Kind != pipeline.KindMessage || ev.TS == "" {
		return ""
	}
	return ev.ChannelID + ":" + ev.TS
}

// Receive records ev as received, when the inbox keeps it and it is not
// a resumed event (recorded already). fresh is false when the event was
// recorded before (a redelivery, here or at another replica sharing the
// store): that copy is not run, the first one is. A message's dedupe key
// is recorded in the same write (the drop stage reads the outcome off the
// event): the first of twins (a mention arrives as a message and as a
// mention) to be received is the one that runs.
func (r *Recorder) Receive(ctx context.Context, ev *pipeline.Event) (fresh bool, err error) {
	if !kept(ev) || ev.Resumed || ev.Recorded {
		return true, nil
	}
	e, err := r.Entry(ev)
	if err != nil {
		return true, err
	}
	key := pipeline.DedupeKey(ev)
	fresh, marked, err := r.o.Store.InboxReceiveMark(ctx, e, key)
	if err == nil && fresh && key != "" {
		ev.Marked, ev.Fresh = true, marked
	}
	return fresh, err
}

// Entry is ev's record as the inbox keeps it (its text redacted), for a
// writer that records it itself: a scheduled run's claim writes its run's
// record in its own transaction, and the run is then delivered Recorded.
func (r *Recorder) Entry(ev *pipeline.Event) (store.InboxEntry, error) {
	cp := *ev
	cp.Text = r.o.Redact(cp.Text)
	if cp.Command != nil {
		c := *cp.Command
		c.Args = r.o.Redact(c.Args)
		cp.Command = &c
	}
	data, err := json.Marshal(&cp)
	if err != nil {
		return store.InboxEntry{}, fmt.Errorf("inbox: encode event: %w", err)
	}
	return store.InboxEntry{EventID: ev.ID, Kind: ev.Kind.String(), ChannelID: ev.ChannelID,
		ThreadTS: ev.RootTS(), UserID: ev.UserID, MsgKey: MsgKey(ev), Event: data}, nil
}

// count adds one to the events that ended as outcome.
func (r *Recorder) count(outcome string) {
	if r.o.Outcomes != nil {
		r.o.Outcomes.WithLabelValues(outcome).Inc()
	}
}
