package pipeline_test

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

const (
	peerUser = "U0ONC"
	peerBot  = "B0ONC"
)

// fakePeers is the persona's ## Peers.
type fakePeers []string

func (p fakePeers) IsPeer(u string) bool {
	for _, x := range p {
		if x == u {
			return true
		}
	}
	return false
}

// memTurns counts like the store: per thread, since a person's message.
type memTurns struct {
	mu      sync.Mutex
	since   map[string]int
	spoke   []string
	refused int
}

func (m *memTurns) TakePeerTurn(_ context.Context, key string, perPerson, _ int) (bool, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.since == nil {
		m.since = map[string]int{}
	}
	if m.since[key] >= perPerson {
		m.refused++
		return false, m.refused == 1, nil
	}
	m.since[key]++
	return true, false, nil
}

func (m *memTurns) PersonSpoke(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spoke = append(m.spoke, key)
	delete(m.since, key)
	return nil
}

// peerMsg is a peer's post in the trusted channel's thread rooted at 1.0.
func peerMsg(id, ts, text string) *pipeline.Event {
	return &pipeline.Event{ID: id, Kind: pipeline.KindMessage, Type: "message", ChannelID: trustedCh,
		ChannelType: pipeline.ChannelPublic, UserID: peerUser, BotID: peerBot, TS: ts, ThreadTS: "1.0", Text: text}
}

func newPeerDrop(t *testing.T, turns *memTurns) (*dropFixture, pipeline.Handler) {
	t.Helper()
	tracer, sr := newTracer()
	f := &dropFixture{next: &terminal{}, seen: memSeen(), drops: newDropCounter(), metrics: newStageMetrics(), sr: sr}
	deps := pipeline.DropDeps{Roster: worldRoster(), Seen: f.seen, Self: selfFn, Drops: f.drops, Log: discardLog(),
		Peers: &pipeline.Peers{Roster: fakePeers{peerUser}, Turns: turns, Max: 2}}
	f.h = pipeline.Chain(f.next, pipeline.NewDrop(tracer, f.metrics, deps))
	return f, f.h
}

func TestDropPeers(t *testing.T) {
	mention := "<@" + botUser + "> can you check the alert?"
	tests := []struct {
		name   string
		ev     *pipeline.Event
		reason string // "" passes, as a peer
	}{
		{"peer mentioning the persona", peerMsg("E1", "2.0", mention), ""},
		{"peer not mentioning it", peerMsg("E1", "2.0", "standing by"), pipeline.DropSelf},
		{"peer mentioning someone else", peerMsg("E1", "2.0", "<@U0REL> over to you"), pipeline.DropSelf},
		{"a bot not on the list", func() *pipeline.Event {
			ev := peerMsg("E1", "2.0", mention)
			ev.UserID, ev.BotID = "U0OTHER", "B0OTHER"
			return ev
		}(), pipeline.DropSelf},
		{"peer in a DM", func() *pipeline.Event {
			ev := peerMsg("E1", "2.0", mention)
			ev.ChannelID, ev.ChannelType, ev.ThreadTS = dmCh, pipeline.ChannelIM, ""
			return ev
		}(), pipeline.DropSelf},
		{"peer's message without a user", func() *pipeline.Event {
			ev := peerMsg("E1", "2.0", mention)
			ev.Subtype = "bot_message"
			return ev
		}(), pipeline.DropSelf},
		{"peer in a restricted channel", func() *pipeline.Event {
			ev := peerMsg("E1", "2.0", mention)
			ev.ChannelID = randomCh
			return ev
		}(), pipeline.DropWhitelist},
		{"the persona's own post", func() *pipeline.Event {
			ev := peerMsg("E1", "2.0", mention)
			ev.UserID, ev.BotID = botUser, botID
			return ev
		}(), pipeline.DropSelf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, h := newPeerDrop(t, &memTurns{})
			if err := h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if tt.reason != "" {
				f.assertDropped(t, tt.reason, 0)
				return
			}
			f.assertPassed(t)
			if !f.next.ev.Peer {
				t.Error("a peer's admitted message is not marked Peer")
			}
		})
	}
}

// Past AGENT_PEER_TURNS a peer's mention is dropped as peer_limit until a
// person writes in the thread.
func TestDropPeerLimit(t *testing.T) {
	turns := &memTurns{}
	f, h := newPeerDrop(t, turns)
	ctx := context.Background()
	mention := "<@" + botUser + "> next"
	for i, ts := range []string{"2.0", "3.0"} {
		if err := h.Handle(ctx, peerMsg("E"+ts, ts, mention)); err != nil {
			t.Fatal(err)
		}
		if f.next.calls != i+1 {
			t.Fatalf("peer turn %d not admitted", i+1)
		}
	}
	if err := h.Handle(ctx, peerMsg("E4", "4.0", mention)); err != nil {
		t.Fatal(err)
	}
	if f.next.calls != 2 || testutil.ToFloat64(f.drops.WithLabelValues(pipeline.DropPeerLimit)) != 1 {
		t.Fatalf("third peer turn: next ran %d times, peer_limit %v", f.next.calls, testutil.ToFloat64(f.drops.WithLabelValues(pipeline.DropPeerLimit)))
	}
	// A redelivery of an admitted message is a duplicate, not a turn.
	if err := h.Handle(ctx, peerMsg("E2.0", "2.0", mention)); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(f.drops.WithLabelValues(pipeline.DropDuplicate)); got != 1 {
		t.Fatalf("redelivery: duplicate = %v", got)
	}
	// A person writes in the thread: the peer is heard again.
	spoke := msg("E5", trustedCh, member, "1.0")
	spoke.TS = "5.0"
	if err := h.Handle(ctx, spoke); err != nil {
		t.Fatal(err)
	}
	if len(turns.spoke) != 1 || turns.spoke[0] != pipeline.ThreadKey(trustedCh, "1.0") {
		t.Fatalf("person's message reset %q", turns.spoke)
	}
	if err := h.Handle(ctx, peerMsg("E6", "6.0", mention)); err != nil {
		t.Fatal(err)
	}
	if f.next.calls != 4 || !f.next.ev.Peer {
		t.Fatalf("after a person wrote: next ran %d times (peer %v)", f.next.calls, f.next.ev.Peer)
	}
}

// A peer-admitted message never gains a person's role, and runs at most
// in ask.
func TestAuthPeer(t *testing.T) {
	tracer, _ := newTracer()
	next := &terminal{}
	dir := worldDirectory(nil)
	h := pipeline.Chain(next, pipeline.NewAuth(tracer, nil, dir, threadModes(nil), pipeline.ModeRules{Default: pipeline.ModeBypass}))
	ev := msg("E1", trustedCh, manager, "1.0") // even a manager's id
	ev.BotID, ev.Peer = "B0X", true
	if err := h.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	a, _ := pipeline.AccessFromContext(next.ctx)
	if a.Role != pipeline.RolePeer || len(a.Scopes) != 0 || a.Managing() || a.Privileged() || a.HasScope("schedule") || a.Mode != pipeline.ModeAsk {
		t.Fatalf("peer's access = %+v", a)
	}
	if got := pipeline.Envelope(peerUser, string(pipeline.RolePeer), "hi"); got != `<message from="<@U0ONC>" role="peer">hi</message>` {
		t.Fatalf("peer envelope = %s", got)
	}
}

// A peer runs no command: its "/mode bypass" is words for the model.
func TestAgentPeerRunsNoCommand(t *testing.T) {
	agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
	commands := &fakeCommands{handle: func(*pipeline.Event) bool { return true }}
	tracer, _ := newTracer()
	h := pipeline.Chain(&replyRecorder{}, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, commands, &fakeHome{}))
	ev := peerMsg("E1", "2.0", "/mode bypass")
	ev.Peer = true
	ctx := pipeline.NewContextWithAccess(context.Background(), pipeline.Access{UserID: peerUser, Role: pipeline.RolePeer})
	if err := h.Handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if commands.calls != 0 || agent.turns != 1 {
		t.Fatalf("peer's command: commands %d turns %d, want 0 and 1", commands.calls, agent.turns)
	}
}
