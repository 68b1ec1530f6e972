package fleet

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

const (
	// SweepEvery is how often a replica looks for the unfinished events
	// of replicas that died.
	SweepEvery = time.Second
	// ApprovalPoll is how often a turn waiting for a card reads its
	// request back, in case the announcement of its decision was lost
	// (the approval gate's Poll).
	ApprovalPoll = 2 * time.Second
	// orderPoll is how often a message waiting for an older one of its
	// thread, held by another replica, looks again.
	orderPoll = 25 * time.Millisecond
	// maxYield bounds how long a message lets an older one of its thread,
	// expected in this replica's queue, go first.
	maxYield = 30 * time.Second
	// relisten is the pause before listening again after the
	// announcements' connection failed.
	relisten = time.Second
	// abortTimeout bounds the store calls of an /abort across replicas.
	abortTimeout = 5 * time.Second
)

// Locks are the store's thread locks across replicas and what they tell
// of a thread's order.
type Locks interface {
	// LockThread waits for the thread's lock, honouring ctx.
	LockThread(ctx context.Context, threadKey string) (unlock func(), err error)
	// EarlierPending tells whether the thread has unfinished messages
	// older than msgKey, and whose.
	EarlierPending(ctx context.Context, channelID, threadTS, msgKey string) (store.Earlier, error)
	// ThreadBusy reports whether a turn of the thread runs at some
	// replica.
	ThreadBusy(ctx context.Context, threadKey string) (bool, error)
	// TurnStarter returns who started the turn another live replica runs
	// in the thread.
	TurnStarter(ctx context.Context, channelID, threadTS string) (userID string, ok bool, err error)
}

// Orphans are the unfinished events of replicas that are gone.
type Orphans interface {
	// ClaimOrphans takes them over and returns them, oldest first.
	ClaimOrphans(ctx context.Context) ([]store.InboxEntry, error)
}

// Bus carries announcements between replicas.
type Bus interface {
	// Notify sends payload on channel to every replica listening.
	Notify(ctx context.Context, channel, payload string) error
	// Listen calls fn with every notification on channels until ctx is
	// done (nil) or the connection fails (its error).
	Listen(ctx context.Context, fn func(channel, payload string), channels ...string) error
}

// Store is the store's fleet as the protocol uses it (store.Fleet).
type Store interface {
	Locks
	Orphans
	Bus
}

var _ Store = (*store.Fleet)(nil)

// Options are a Replica's settings.
type Options struct {
	// Settle is AGENT_ORDER_SETTLE: how long after its receipt a message
	// looks for the older ones of its thread.
	Settle time.Duration
	// MsgKey is a message's key in the inbox (channel:ts, "" for what has
	// no place in a thread's order): inbox.MsgKey.
	MsgKey func(*pipeline.Event) string
	// Clock is what the order's and the sweep's waits are timed on; nil:
	// the system clock.
	Clock clock.Clock
	// Log; nil logs nothing.
	Log *slog.Logger
}

// Replica is this process's part in the fleet.
type Replica struct {
	store  Store
	settle time.Duration
	msgKey func(*pipeline.Event) string
	clock  clock.Clock
	log    *slog.Logger
	// yields: event id → when it first let an older message go first.
	yields sync.Map
}

// New makes this process a replica over st (the store's fleet, joined).
func New(st Store, o Options) *Replica {
	return &Replica{store: st, settle: o.Settle, msgKey: o.MsgKey,
		clock: cmp.Or[clock.Clock](o.Clock, clock.System),
		log:   cmp.Or(o.Log, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

// NewID names this process in the fleet: host, pid and a random part (a
// restarted process on the same host and pid is another replica).
func NewID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "agent"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// sleep waits d on the clock, or until ctx is done (its error).
func (r *Replica) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	elapsed := make(chan struct{})
	t := r.clock.AfterFunc(d, func() { close(elapsed) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-elapsed:
		return nil
	}
}
