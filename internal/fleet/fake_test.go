package fleet

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// db is an in-memory stand-in for the database replicas share: the
// thread locks, the inbox rows and their owners, the replicas that died,
// and the notifications. Each replica sees it through a member, which
// implements Store with store.Fleet's rules.
type db struct {
	mu        sync.Mutex
	locks     map[string]string // thread key → the replica holding it
	released  chan struct{}     // closed and replaced at each unlock
	dead      map[string]bool
	rows      []store.InboxEntry
	subs      map[*sub]bool
	listening chan string // told the id of each replica that listens
	notes     []string    // "channel payload" of each notification
}

type sub struct {
	notes chan [2]string
}

func newDB() *db {
	return &db{locks: map[string]string{}, released: make(chan struct{}), dead: map[string]bool{},
		subs: map[*sub]bool{}, listening: make(chan string, 8)}
}

// add records an inbox row.
func (d *db) add(e store.InboxEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rows = append(d.rows, e)
}

// setState moves the event's row to state.
func (d *db) setState(eventID, state string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.rows {
		if d.rows[i].EventID == eventID {
			d.rows[i].State = state
		}
	}
}

func (d *db) sent() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.notes)
}

func (d *db) member(id string) *member { return &member{db: d, id: id} }

type member struct {
	db *db
	id string
}

var _ Store = (*member)(nil)

func unfinished(state string) bool {
	return state == store.InboxReceived || state == store.InboxRunning || state == store.InboxAnswering
}

// alive: this replica, and every other not dead (the empty owner is a
// single process's, from before the fleet: gone).
func (m *member) alive(owner string) bool {
	return owner == m.id || (owner != "" && !m.db.dead[owner])
}

func (m *member) LockThread(ctx context.Context, key string) (func(), error) {
	for {
		m.db.mu.Lock()
		if m.db.locks[key] == "" {
			m.db.locks[key] = m.id
			m.db.mu.Unlock()
			return func() {
				m.db.mu.Lock()
				defer m.db.mu.Unlock()
				delete(m.db.locks, key)
				close(m.db.released)
				m.db.released = make(chan struct{})
			}, nil
		}
		released := m.db.released
		m.db.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-released:
		}
	}
}

func (m *member) EarlierPending(_ context.Context, channelID, threadTS, msgKey string) (store.Earlier, error) {
	m.db.mu.Lock()
	defer m.db.mu.Unlock()
	out := store.EarlierNone
	for _, e := range m.db.rows {
		if e.ChannelID != channelID || e.ThreadTS != threadTS || e.MsgKey == "" || e.MsgKey >= msgKey || !unfinished(e.State) {
			continue
		}
		if e.Owner != m.id && m.alive(e.Owner) {
			return store.EarlierElsewhere, nil
		}
		out = store.EarlierHere
	}
	return out, nil
}

func (m *member) ThreadBusy(_ context.Context, key string) (bool, error) {
	m.db.mu.Lock()
	defer m.db.mu.Unlock()
	return m.db.locks[key] != "", nil
}

func (m *member) TurnStarter(_ context.Context, channelID, threadTS string) (string, bool, error) {
	m.db.mu.Lock()
	defer m.db.mu.Unlock()
	for _, e := range m.db.rows { // (added oldest first)
		if e.ChannelID == channelID && e.ThreadTS == threadTS && e.Owner != m.id && m.alive(e.Owner) &&
			(e.State == store.InboxRunning || e.State == store.InboxAnswering) {
			return e.UserID, true, nil
		}
	}
	return "", false, nil
}

func (m *member) ClaimOrphans(context.Context) ([]store.InboxEntry, error) {
	m.db.mu.Lock()
	defer m.db.mu.Unlock()
	var out []store.InboxEntry
	for i, e := range m.db.rows {
		if unfinished(e.State) && !m.alive(e.Owner) {
			m.db.rows[i].Owner = m.id
			out = append(out, m.db.rows[i])
		}
	}
	return out, nil
}

// Notify delivers to every listener, the sender's own included (as
// Postgres does: a replica listens on a connection of its own).
func (m *member) Notify(_ context.Context, channel, payload string) error {
	m.db.mu.Lock()
	defer m.db.mu.Unlock()
	m.db.notes = append(m.db.notes, channel+" "+payload)
	for s := range m.db.subs {
		s.notes <- [2]string{channel, payload}
	}
	return nil
}

func (m *member) Listen(ctx context.Context, fn func(channel, payload string), channels ...string) error {
	s := &sub{notes: make(chan [2]string, 64)}
	m.db.mu.Lock()
	m.db.subs[s] = true
	m.db.mu.Unlock()
	defer func() {
		m.db.mu.Lock()
		delete(m.db.subs, s)
		m.db.mu.Unlock()
	}()
	m.db.listening <- m.id
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-s.notes:
			if slices.Contains(channels, n[0]) {
				fn(n[0], n[1])
			}
		}
	}
}

// testClock is a manual clock that tells the test each wait it arms.
type testClock struct {
	*clock.Manual
	armed chan time.Duration
}

func newClock() testClock {
	return testClock{clock.NewManual(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)), make(chan time.Duration, 16)}
}

func (c testClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := c.Manual.AfterFunc(d, f)
	c.armed <- d
	return t
}

// waitArmed waits until the code under test arms a wait on the clock, and
// returns its duration.
func (c testClock) waitArmed(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.armed:
		return d
	case <-t.Context().Done():
		t.Fatal("no wait armed")
		return 0
	}
}

// msgKey is inbox.MsgKey (internal/inbox may not be imported here).
func msgKey(ev *pipeline.Event) string {
	if ev.Kind != pipeline.KindMessage || ev.TS == "" {
		return ""
	}
	return ev.ChannelID + ":" + ev.TS
}

func newReplica(d *db, id string, clk clock.Clock, settle time.Duration) *Replica {
	return New(d.member(id), Options{Settle: settle, MsgKey: msgKey, Clock: clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// engineStub is the engine's abort surface at one replica: the turns it
// runs, by thread key, with who started each.
type engineStub struct {
	commands.Engine // (not called)
	mu              sync.Mutex
	running         map[string]string
	stopped         chan string // told each thread stopped here
}

func newEngine() *engineStub {
	return &engineStub{running: map[string]string{}, stopped: make(chan string, 8)}
}

func (e *engineStub) Abort(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.running[key]; !ok {
		return false
	}
	delete(e.running, key)
	e.stopped <- key
	return true
}

func (e *engineStub) AbortOwn(key, user string) (stopped, running bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	starter, ok := e.running[key]
	if !ok {
		return false, false
	}
	if starter != user {
		return false, true
	}
	delete(e.running, key)
	e.stopped <- key
	return true, true
}

// gateStub is the approval gate's side of the fleet.
type gateStub struct {
	mu      sync.Mutex
	expired []map[string]bool
	woken   chan string
}

func newGate() *gateStub { return &gateStub{woken: make(chan string, 8)} }

func (g *gateStub) ExpireThreads(_ context.Context, threads map[string]bool) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expired = append(g.expired, threads)
	return len(threads), nil
}

func (g *gateStub) Wake(_ context.Context, id string) { g.woken <- id }
