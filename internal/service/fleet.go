package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Replicas: with Postgres, several processes of one persona may run at once
// (a rolling deploy, a standby). Each joins the store's fleet (see
// store.Fleet) and then:
//
//   - runs only the events whose inbox record it made (the insert is the
//     arbiter: a copy another replica recorded first is dropped);
//   - holds the thread's lock around each message's turn, and lets a
//     thread's older messages (by the platform's ts) that another live
//     replica holds go first, including those recorded up to AGENT_ORDER_SETTLE
//     after the newer one was received;
//   - takes over, every fleetSweep, the unfinished events of replicas that
//     died (their locks went with their connections), with the rule of a
//     crash restart: said in the thread, resumed, or given up;
//   - announces card decisions, so that the replica whose turn waits for
//     the click releases it, and reads its pending request back every
//     approvalPoll in case an announcement was lost.
const (
	fleetSweep    = time.Second
	approvalPoll  = 2 * time.Second
	approvalTopic = "agent_approvals"
	abortTopic    = "agent_abort"
	// orderPoll is how often a message waiting for an older one of its
	// thread, held by another replica, looks again.
	orderPoll = 25 * time.Millisecond
	// maxYield bounds how long a message lets an older one of its thread,
	// expected in this replica's queue, go first.
	maxYield = 30 * time.Second
)

// replicaID names this process in the fleet: host, pid and a random part
// (a restarted process on the same host and pid is another replica).
func replicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "agent"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// joinFleet makes this service a replica when its store is shared.
func (s *Service) joinFleet(ctx context.Context) error {
	if !store.IsPostgres(s.cfg.Database()) {
		return nil
	}
	f, err := s.store.OpenFleet(ctx, replicaID())
	if err != nil {
		return err
	}
	s.fleet = f
	s.closers = append(s.closers, func(context.Context) error { return f.Close() })
	s.log.Info("joined the fleet of replicas", "replica", f.ID())
	return nil
}

// lockThread is the gateway's LockThread with replicas: the thread's lock,
// taken once no older message of the thread is pending. It looks once the
// message has settled (AGENT_ORDER_SETTLE after its receipt), so that an older
// one delivered about the same time is seen even if it is recorded after
// this one. An older one held by another live replica is waited for; one
// of this replica's own (queued behind, or a dead replica's, taken over by
// sweep) goes first: this one yields its place in the queue, for at most
// maxYield.
func (s *Service) lockThread(ctx context.Context, ev *pipeline.Event) (func(), error) {
	key, mk := ev.ThreadKey(), inbox.MsgKey(ev)
	if err := settle(ctx, ev, s.cfg.OrderSettle); err != nil {
		return nil, err
	}
	for {
		unlock, err := s.fleet.LockThread(ctx, key)
		if err != nil {
			return nil, err
		}
		if mk == "" || ev.Resumed {
			return unlock, nil
		}
		earlier, err := s.fleet.EarlierPending(ctx, ev.ChannelID, ev.RootTS(), mk)
		if err != nil {
			s.log.WarnContext(ctx, "fleet: order of the thread not checked", "event_id", ev.ID, "err", err)
			return unlock, nil
		}
		switch earlier {
		case store.EarlierNone:
			s.yields.Delete(ev.ID)
			return unlock, nil
		case store.EarlierHere:
			first, _ := s.yields.LoadOrStore(ev.ID, time.Now())
			if time.Since(first.(time.Time)) > maxYield {
				s.log.WarnContext(ctx, "fleet: an older message of the thread never came; running this one first", "event_id", ev.ID)
				s.yields.Delete(ev.ID)
				return unlock, nil
			}
			unlock()
			return nil, gateway.ErrYield
		}
		unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(orderPoll):
		}
	}
}

// settle waits until d (AGENT_ORDER_SETTLE) has passed since ev was
// received, so that the thread's older messages (by the platform's ts)
// delivered about the same time, here or at another replica, are recorded
// before ev looks for them, and go first even though they were recorded
// after it. d covers the platform's skew between two deliveries (a backlog
// replayed on reconnection comes a millisecond apart, to either replica)
// plus the other replica's one-row insert. It is waited before the
// thread's lock is taken (an older message at another replica needs it),
// and only once: an event back from a yield is past it, and a message
// queued behind its thread's running turn has waited longer already.
func settle(ctx context.Context, ev *pipeline.Event, d time.Duration) error {
	if inbox.MsgKey(ev) == "" || ev.Resumed || ev.Received.IsZero() {
		return nil
	}
	wait := d - time.Since(ev.Received)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// sweep takes over the unfinished events of dead replicas until ctx is
// done: at once (a replica starting after a crash takes its own old
// events), then every fleetSweep.
func (s *Service) sweep(ctx context.Context, deliver func(*pipeline.Event)) {
	t := time.NewTicker(fleetSweep)
	defer t.Stop()
	for {
		entries, err := s.fleet.ClaimOrphans(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "fleet: events of dead replicas not read", "err", err)
		case len(entries) > 0:
			s.log.InfoContext(ctx, "fleet: took over the events of a replica that stopped", "count", len(entries))
			s.expireThreadApprovals(ctx, entries)
			s.inbox.Resume(ctx, entries, deliver)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expireThreadApprovals expires the pending approvals of the threads whose
// events were taken over: the turn that waited for them died with its
// replica, and the resumed turn asks again.
func (s *Service) expireThreadApprovals(ctx context.Context, entries []store.InboxEntry) {
	threads := map[string]bool{}
	for _, e := range entries {
		threads[pipeline.ThreadKey(e.ChannelID, e.ThreadTS)] = true
	}
	n, err := s.gate.ExpireThreads(ctx, threads)
	if err != nil {
		s.log.WarnContext(ctx, "fleet: pending approvals of a stopped replica not expired", "err", err)
	} else if n > 0 {
		s.log.InfoContext(ctx, "fleet: expired the approvals a stopped replica waited for", "count", n)
	}
}

// listen carries the other replicas' announcements until ctx is done:
// decisions on cards whose turns wait here, and /abort of turns running
// here.
func (s *Service) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.fleet.Listen(ctx, func(channel, payload string) {
			switch channel {
			case approvalTopic:
				s.gate.Wake(ctx, payload)
			case abortTopic:
				if s.abortAnnounced(payload) {
					s.log.InfoContext(ctx, "fleet: stopped a turn at another replica's /abort", "thread", payload)
				}
			}
		}, approvalTopic, abortTopic)
		if err != nil && ctx.Err() == nil {
			// Pending cards are read back meanwhile (approvalPoll).
			s.log.WarnContext(ctx, "fleet: announcements not heard; listening again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// fleetEngine is the engine's control surface for /abort with replicas: a
// turn running at another replica is stopped there.
type fleetEngine struct {
	commands.Engine
	s *Service
}

// Abort stops the thread's turn here, or announces the stop to the
// replica whose turn holds the thread.
func (e fleetEngine) Abort(threadKey string) bool {
	if e.Engine.Abort(threadKey) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	busy, err := e.s.fleet.ThreadBusy(ctx, threadKey)
	if err != nil || !busy {
		return false
	}
	if err := e.s.fleet.Notify(ctx, abortTopic, threadKey); err != nil {
		e.s.log.WarnContext(ctx, "fleet: /abort not announced", "thread", threadKey, "err", err)
		return false
	}
	return true
}

// AbortOwn stops the thread's turn here when userID started it, or, when
// it runs at another replica, announces the stop there once the inbox
// names userID as its starter; that replica checks again (abortAnnounced).
func (e fleetEngine) AbortOwn(threadKey, userID string) (stopped, running bool) {
	if stopped, running = e.Engine.AbortOwn(threadKey, userID); running {
		return stopped, running
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	busy, err := e.s.fleet.ThreadBusy(ctx, threadKey)
	if err != nil || !busy {
		return false, false
	}
	channel, root, _ := strings.Cut(threadKey, ":")
	starter, ok, err := e.s.fleet.TurnStarter(ctx, channel, root)
	if err != nil {
		e.s.log.WarnContext(ctx, "fleet: /abort: the turn's starter not known", "thread", threadKey, "err", err)
	}
	if !ok || starter != userID {
		return false, true
	}
	if err := e.s.fleet.Notify(ctx, abortTopic, threadKey+"\n"+userID); err != nil {
		e.s.log.WarnContext(ctx, "fleet: /abort not announced", "thread", threadKey, "err", err)
		return false, true
	}
	return true, true
}

// abortAnnounced stops the turn another replica's /abort names: the
// thread's ("<key>"), or only when the named person started it
// ("<key>\n<user>").
func (s *Service) abortAnnounced(payload string) bool {
	key, user, own := strings.Cut(payload, "\n")
	if !own {
		return s.engine.Abort(key)
	}
	stopped, _ := s.engine.AbortOwn(key, user)
	return stopped
}

// announceApproval tells the other replicas that approval id was decided.
func (s *Service) announceApproval(ctx context.Context, id string) error {
	if err := s.fleet.Notify(ctx, approvalTopic, id); err != nil {
		return fmt.Errorf("announce approval: %w", err)
	}
	return nil
}
