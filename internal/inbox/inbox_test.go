package inbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fixture is a Recorder over a real database (in memory) and a chat that
// keeps what is posted.
type fixture struct {
	st       *store.Store
	now      time.Time // the store's clock; it moves only when told
	chat     *chat
	outcomes *prometheus.CounterVec
	r        *Recorder
}

// nowClock is a store's clock whose time is what now says (the
// fixture's, which the tests set); it waits on the system clock.
type nowClock struct {
	clock.Clock
	now func() time.Time
}

func (c nowClock) Now() time.Time { return c.now() }

func newFixture(t *testing.T, c Chat) *fixture {
	t.Helper()
	f := &fixture{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	st, err := store.Open(t.Context(), store.InMemory, store.Options{Clock: nowClock{clock.System, func() time.Time { return f.now }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st, f.outcomes = st, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agent_inbox_events_total"}, []string{"outcome"})
	if c == nil {
		f.chat = &chat{}
		c = f.chat
	}
	f.r = New(Options{Store: st, Chat: c, Self: func() pipeline.Identity { return pipeline.Identity{UserID: "U0BOT"} },
		Outcomes: f.outcomes})
	return f
}

// row returns the record of the event id ("" state when there is none).
func (f *fixture) row(t *testing.T, id string) store.InboxEntry {
	t.Helper()
	all, err := f.st.InboxList(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.EventID == id {
			return e
		}
	}
	return store.InboxEntry{}
}

// count is how many events ended as outcome.
func (f *fixture) count(outcome string) int {
	return int(testutil.ToFloat64(f.outcomes.WithLabelValues(outcome)))
}

// run handles ev as the gateway does: received, begun, handled by h, and
// ended; halted says that shutdown cut it short.
func (f *fixture) run(t *testing.T, ev *pipeline.Event, halted bool, h func(ctx context.Context, p *pipeline.Progress) error) (fresh bool) {
	t.Helper()
	fresh, err := f.r.Receive(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if !fresh {
		ev.Redelivery = true
	}
	ctx, end := f.r.Begin(t.Context(), ev, "trace-"+ev.ID)
	end(h(ctx, pipeline.ProgressFromContext(ctx)), halted)
	return fresh
}

// chat keeps the lines posted, each as "thread: text", and whether the
// event's record was settled when it was.
type chat struct {
	mu    sync.Mutex
	posts []string
	// before, when set, is called with each message posted, before it is.
	before func(m pipeline.Message)
}

func (c *chat) Post(_ context.Context, m pipeline.Message) (string, error) {
	if c.before != nil {
		c.before(m)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts = append(c.posts, m.ChannelID+":"+m.ThreadTS+": "+m.Text)
	return "1.1", nil
}

func (c *chat) said() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.posts...)
}

// readBackChat is a chat that reads threads back: landed holds the ids
// of the events whose answers are there; err, when set, is its failure.
type readBackChat struct {
	chat
	landed map[string]bool
	err    error
}

func (c *readBackChat) Delivered(_ context.Context, _, _, eventID string) (bool, error) {
	return c.landed[eventID], c.err
}

func message(id, channel, ts, text string) *pipeline.Event {
	return &pipeline.Event{ID: id, Kind: pipeline.KindMessage, Type: "message", ChannelID: channel, TS: ts, UserID: "U1", Text: text}
}
