package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fakeRoster is a pipeline.Roster scripted by its fields.
type fakeRoster struct {
	LayerFn     func(channelID string, isDM bool) pipeline.Layer
	IsManagerFn func(userID string) bool
	IsBlockedFn func(userID string) bool
	DMOpenFn    func() bool
}

func (r *fakeRoster) Layer(channelID string, isDM bool) pipeline.Layer {
	return r.LayerFn(channelID, isDM)
}
func (r *fakeRoster) IsManager(userID string) bool { return r.IsManagerFn(userID) }
func (r *fakeRoster) IsBlocked(userID string) bool { return r.IsBlockedFn(userID) }
func (r *fakeRoster) DMOpen() bool                 { return r.DMOpenFn() }

// worldLayer is the trust layer of the sim world's channels.
func worldLayer(channelID string, isDM bool) pipeline.Layer {
	switch {
	case isDM:
		return pipeline.LayerDM
	case channelID == trustedCh:
		return pipeline.LayerTrusted
	case channelID == allowedCh:
		return pipeline.LayerAllowed
	}
	return pipeline.LayerRestricted
}

// worldRoster is the sim world: channel lists configured, so DMs are closed.
func worldRoster() *fakeRoster {
	return &fakeRoster{
		LayerFn:     worldLayer,
		IsManagerFn: func(u string) bool { return u == manager || u == backup },
		IsBlockedFn: func(u string) bool { return u == blocked },
		DMOpenFn:    func() bool { return false },
	}
}

// fakeSeen is a pipeline.SeenStore scripted by its fields; it records the
// keys it was asked to mark.
type fakeSeen struct {
	EventSeenFn func(ctx context.Context, key string) (bool, error)
	MarkEventFn func(ctx context.Context, key string) (bool, error)

	mu     sync.Mutex
	marked []string
}

func (s *fakeSeen) EventSeen(ctx context.Context, key string) (bool, error) {
	return s.EventSeenFn(ctx, key)
}

func (s *fakeSeen) MarkEvent(ctx context.Context, key string) (bool, error) {
	s.mu.Lock()
	s.marked = append(s.marked, key)
	s.mu.Unlock()
	return s.MarkEventFn(ctx, key)
}

func (s *fakeSeen) markCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.marked...)
}

// memSeen is a fakeSeen that behaves like the store: a set of keys.
func memSeen() *fakeSeen {
	var mu sync.Mutex
	keys := map[string]bool{}
	return &fakeSeen{
		EventSeenFn: func(_ context.Context, k string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			return keys[k], nil
		},
		MarkEventFn: func(_ context.Context, k string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			fresh := !keys[k]
			keys[k] = true
			return fresh, nil
		},
	}
}

// fakeLocks is a pipeline.ThreadLocks scripted by its field.
type fakeLocks struct {
	ThreadLockFn func(ctx context.Context, threadKey string) (string, error)
}

func (l *fakeLocks) ThreadLock(ctx context.Context, threadKey string) (string, error) {
	return l.ThreadLockFn(ctx, threadKey)
}

// lockedTo locks the thread rooted at 1.0 in the trusted channel to owner.
func lockedTo(owner string) *fakeLocks {
	return &fakeLocks{ThreadLockFn: func(_ context.Context, key string) (string, error) {
		if key == pipeline.ThreadKey(trustedCh, "1.0") {
			return owner, nil
		}
		return "", nil
	}}
}

func selfFn() pipeline.Identity {
	return pipeline.Identity{UserID: botUser, BotID: botID, TeamID: "T0SIM"}
}

// dropCounter is internal/metrics' pipeline.DropCounter over a fresh,
// unregistered agent_chat_drops_total.
type dropCounter struct{ *prometheus.CounterVec }

func (d dropCounter) Dropped(reason string) pipeline.Counter { return d.WithLabelValues(reason) }

func newDropCounter() dropCounter {
	return dropCounter{prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agent_chat_drops_total"}, []string{"reason"})}
}

// allDropReasons are the reason labels the drop stage reports.
var allDropReasons = append(append([]string(nil), pipeline.DropReasons...), pipeline.MoreDropReasons...)

// dropFixture is a drop stage over fakes, with the terminal after it.
type dropFixture struct {
	h       pipeline.Handler
	next    *terminal
	seen    *fakeSeen
	drops   dropCounter
	metrics promStage
	sr      *tracetest.SpanRecorder
}

func newDropFixture(t *testing.T, roster *fakeRoster, seen *fakeSeen, locks pipeline.ThreadLocks) *dropFixture {
	t.Helper()
	tracer, sr := newTracer()
	f := &dropFixture{next: &terminal{}, seen: seen, drops: newDropCounter(), metrics: newStageMetrics(), sr: sr}
	deps := pipeline.DropDeps{Roster: roster, Seen: seen, Self: selfFn, Drops: f.drops, Log: discardLog()}
	if locks != nil {
		deps.Locks = locks
	}
	f.h = pipeline.Chain(f.next, pipeline.NewDrop(tracer, f.metrics, deps))
	return f
}

// assertDropped checks everything a drop must leave behind: next not run,
// one count for reason and none for the others, no key marked in the store.
func (f *dropFixture) assertDropped(t *testing.T, reason string, markedBefore int) {
	t.Helper()
	if f.next.ran() {
		t.Error("next ran on a dropped event")
	}
	for _, r := range allDropReasons {
		want := 0.0
		if r == reason {
			want = 1
		}
		if got := testutil.ToFloat64(f.drops.WithLabelValues(r)); got != want {
			t.Errorf("agent_chat_drops_total{reason=%q} = %v, want %v", r, got, want)
		}
	}
	if got := f.seen.markCalls(); len(got) != markedBefore {
		t.Errorf("MarkEvent called on a drop path: %q", got[markedBefore:])
	}
	if got := outcomeCount(f.metrics, "drop", pipeline.OutcomeDrop); got != 1 {
		t.Errorf("agent_pipeline_stage_total{drop,drop} = %v, want 1", got)
	}
}

func (f *dropFixture) assertPassed(t *testing.T) {
	t.Helper()
	if !f.next.ran() {
		t.Fatal("next did not run")
	}
	for _, r := range allDropReasons {
		if got := testutil.ToFloat64(f.drops.WithLabelValues(r)); got != 0 {
			t.Errorf("agent_chat_drops_total{reason=%q} = %v on a pass", r, got)
		}
	}
}

// msg is a person's message in the given channel; a reply when thread is set.
func msg(id, channel, user, thread string) *pipeline.Event {
	ev := &pipeline.Event{ID: id, Kind: pipeline.KindMessage, Type: "message", ChannelID: channel,
		ChannelType: pipeline.ChannelPublic, UserID: user, TS: "2.0", ThreadTS: thread, Text: "hello"}
	if strings.HasPrefix(channel, "D") {
		ev.ChannelType = pipeline.ChannelIM
	}
	return ev
}

// home is user opening the persona's DM.
func home(user string) *pipeline.Event {
	return &pipeline.Event{ID: "EvHome", Kind: pipeline.KindHome, Type: "app_home_opened", ChannelID: dmCh,
		ChannelType: pipeline.ChannelIM, UserID: user, TS: "5.0"}
}

// stop is user's click on the stop button of the thread rooted at 1.0.
func stop(channel, user string) *pipeline.Event {
	return &pipeline.Event{ID: "EvStop", Kind: pipeline.KindStop, Type: "agent_session_stopped", ChannelID: channel,
		UserID: user, TS: "5.0", ThreadTS: "1.0", Stop: &pipeline.Stop{}}
}

func with(ev *pipeline.Event, edit func(*pipeline.Event)) *pipeline.Event {
	edit(ev)
	return ev
}

func TestDropReasons(t *testing.T) {
	dmOpen := func(r *fakeRoster) { r.DMOpenFn = func() bool { return true } }
	tests := []struct {
		name   string
		ev     *pipeline.Event
		roster func(*fakeRoster) // edits the sim world roster
		locks  pipeline.ThreadLocks
		want   string // drop reason; "" = passes
	}{
		// self: the bot's own and other bots' posts.
		{name: "bot_id set", ev: with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.BotID = "B0OTHER" }), want: pipeline.DropSelf},
		{name: "own bot_id", ev: with(msg("E1", trustedCh, "", ""), func(e *pipeline.Event) { e.BotID = botID }), want: pipeline.DropSelf},
		{name: "bot_message subtype", ev: with(msg("E1", trustedCh, "", ""), func(e *pipeline.Event) { e.Subtype = "bot_message" }), want: pipeline.DropSelf},
		{name: "bot's own user id", ev: msg("E1", trustedCh, botUser, ""), want: pipeline.DropSelf},
		{name: "bot's own user id in a DM", ev: msg("E1", dmCh, botUser, ""), want: pipeline.DropSelf},

		// ignored: subtypes that are not a person speaking.
		{name: "message_changed", ev: with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Subtype = "message_changed" }), want: pipeline.DropNotSpeech},
		{name: "channel_join", ev: with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Subtype = "channel_join" }), want: pipeline.DropNotSpeech},
		{name: "message_deleted", ev: with(msg("E1", trustedCh, "", ""), func(e *pipeline.Event) { e.Subtype = "message_deleted" }), want: pipeline.DropNotSpeech},
		{name: "no user", ev: msg("E1", trustedCh, "", ""), want: pipeline.DropNotSpeech},
		{name: "file_share passes", ev: with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Subtype = "file_share" })},
		{name: "thread_broadcast passes", ev: with(msg("E1", trustedCh, member, "1.0"), func(e *pipeline.Event) { e.Subtype = "thread_broadcast" })},
		{name: "me_message passes", ev: with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Subtype = "me_message" })},

		// blocked, in every layer, even the manager's DM.
		{name: "blocked in trusted", ev: msg("E1", trustedCh, blocked, ""), want: pipeline.DropBlocked},
		{name: "blocked in open DM", ev: msg("E1", dmCh, blocked, ""), roster: dmOpen, want: pipeline.DropBlocked},
		{name: "blocked manager", ev: msg("E1", trustedCh, manager, ""),
			roster: func(r *fakeRoster) { r.IsBlockedFn = func(string) bool { return true } }, want: pipeline.DropBlocked},

		// dm: closed DMs admit only the managers.
		{name: "DM from non-manager, DMs closed", ev: msg("E1", dmCh, member, ""), want: pipeline.DropDM},
		{name: "DM from approver, DMs closed", ev: msg("E1", dmCh, approver, ""), want: pipeline.DropDM},
		{name: "DM by channel prefix, DMs closed", ev: with(msg("E1", dmCh, outsider, ""), func(e *pipeline.Event) { e.ChannelType = "" }), want: pipeline.DropDM},
		{name: "DM from non-manager, DMs open", ev: msg("E1", dmCh, member, ""), roster: dmOpen},
		{name: "DM from manager", ev: msg("E1", dmCh, manager, "")},
		{name: "DM from backup", ev: msg("E1", dmCh, backup, "")},

		// whitelist: restricted channels admit only the managers.
		{name: "restricted non-manager", ev: msg("E1", randomCh, member, ""), want: pipeline.DropWhitelist},
		{name: "restricted outsider reply", ev: msg("E1", randomCh, outsider, "1.0"), want: pipeline.DropWhitelist},
		{name: "restricted approver", ev: msg("E1", randomCh, approver, ""), want: pipeline.DropWhitelist},
		{name: "restricted manager", ev: msg("E1", randomCh, manager, "")},
		{name: "restricted backup", ev: msg("E1", randomCh, backup, "")},
		{name: "trusted member", ev: msg("E1", trustedCh, member, "")},
		{name: "trusted outsider", ev: msg("E1", trustedCh, outsider, "")},
		{name: "allowed member", ev: msg("E1", allowedCh, member, "")},
		{name: "allowed outsider reply", ev: msg("E1", allowedCh, outsider, "1.0")},

		// one_on_one: a thread locked by /1on1.
		{name: "locked to someone else", ev: msg("E1", trustedCh, member, "1.0"), locks: lockedTo(outsider), want: pipeline.DropOneOnOne},
		{name: "locked, lock owner", ev: msg("E1", trustedCh, member, "1.0"), locks: lockedTo(member)},
		{name: "locked, manager", ev: msg("E1", trustedCh, manager, "1.0"), locks: lockedTo(member)},
		{name: "locked, backup", ev: msg("E1", trustedCh, backup, "1.0"), locks: lockedTo(member)},
		{name: "other thread not locked", ev: msg("E1", trustedCh, member, "9.0"), locks: lockedTo(outsider)},
		{name: "top-level message not locked", ev: msg("E1", trustedCh, member, ""), locks: lockedTo(outsider)},

		// commands are judged by the layers like messages.
		{name: "command in restricted channel", ev: &pipeline.Event{ID: "command:T1", Kind: pipeline.KindCommand, ChannelID: randomCh,
			UserID: member, Command: &pipeline.Command{Name: "/help"}}, want: pipeline.DropWhitelist},
		{name: "command in closed DM", ev: &pipeline.Event{ID: "command:T1", Kind: pipeline.KindCommand, ChannelID: dmCh,
			UserID: member, Command: &pipeline.Command{Name: "/help"}}, want: pipeline.DropDM},
		{name: "command from manager", ev: &pipeline.Event{ID: "command:T1", Kind: pipeline.KindCommand, ChannelID: randomCh,
			UserID: manager, Command: &pipeline.Command{Name: "/help"}}},

		// Opening the DM: a persona that would not answer the person's DM
		// offers them nothing either.
		{name: "DM opened by non-manager, DMs closed", ev: home(member), want: pipeline.DropDM},
		{name: "DM opened by outsider, DMs closed", ev: home(outsider), want: pipeline.DropDM},
		{name: "DM opened by non-manager, DMs open", ev: home(member), roster: dmOpen},
		{name: "DM opened by manager", ev: home(manager)},
		{name: "DM opened by blocked user, DMs open", ev: home(blocked), roster: dmOpen, want: pipeline.DropBlocked},
		{name: "DM opened by nobody", ev: home(""), roster: dmOpen, want: pipeline.DropNotSpeech},

		// The stop button passes the layers like the words it stops.
		{name: "stop in restricted channel by member", ev: stop(randomCh, member), want: pipeline.DropWhitelist},
		{name: "stop in closed DM by member", ev: stop(dmCh, member), want: pipeline.DropDM},
		{name: "stop by blocked user", ev: stop(trustedCh, blocked), want: pipeline.DropBlocked},
		{name: "stop in trusted channel by member", ev: stop(trustedCh, member)},
		{name: "stop in restricted channel by manager", ev: stop(randomCh, manager)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roster := worldRoster()
			if tt.roster != nil {
				tt.roster(roster)
			}
			f := newDropFixture(t, roster, memSeen(), tt.locks)
			if err := f.h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if tt.want == "" {
				f.assertPassed(t)
				assertSpan(t, f.sr, "pipeline.drop", pipeline.OutcomePass, "")
				if len(f.seen.markCalls()) == 0 {
					t.Error("a passing event was not marked in the store")
				}
				return
			}
			f.assertDropped(t, tt.want, 0)
			assertSpan(t, f.sr, "pipeline.drop", pipeline.OutcomeDrop, tt.want)
		})
	}
}

func TestDropPassesContextSpanToNext(t *testing.T) {
	f := newDropFixture(t, worldRoster(), memSeen(), nil)
	if err := f.h.Handle(context.Background(), msg("E1", trustedCh, member, "")); err != nil {
		t.Fatal(err)
	}
	if !trace.SpanContextFromContext(f.next.ctx).IsValid() {
		t.Error("next's context carries no span: stages below would start new traces")
	}
}

// TestDropMarksPassingEvent: only an event that passes is written down.
func TestDropMarksPassingEvent(t *testing.T) {
	f := newDropFixture(t, worldRoster(), memSeen(), nil)
	if err := f.h.Handle(context.Background(), msg("Ev1", trustedCh, member, "")); err != nil {
		t.Fatal(err)
	}
	if len(f.seen.markCalls()) == 0 {
		t.Error("a passing event was not marked in the store")
	}
}

func TestDropDuplicates(t *testing.T) {
	mention := func(id string) *pipeline.Event {
		return with(msg(id, trustedCh, member, ""), func(e *pipeline.Event) { e.Type = "app_mention"; e.Text = "<@U0BOT> hi" })
	}
	tests := []struct {
		name   string
		seen   func() *fakeSeen
		first  *pipeline.Event // nil: no first delivery
		second *pipeline.Event
	}{
		{name: "same event id twice", seen: memSeen, first: msg("E1", trustedCh, member, ""),
			second: msg("E1", trustedCh, member, "")},
		{name: "app_mention then message, same channel+ts", seen: memSeen, first: mention("E1"),
			second: with(msg("E2", trustedCh, member, ""), func(e *pipeline.Event) { e.Text = "<@U0BOT> hi" })},
		{name: "message then app_mention", seen: memSeen, first: msg("E2", trustedCh, member, ""),
			second: mention("E1")},
		{name: "same click twice", seen: memSeen, first: click("action:T1", trustedCh, outsider),
			second: click("action:T1", trustedCh, outsider)},
		{name: "retry of the same event", seen: memSeen, first: msg("E1", trustedCh, member, ""),
			second: with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Retry = 1 })},
		{name: "redelivery the store has seen", seen: func() *fakeSeen {
			s := memSeen()
			s.EventSeenFn = func(context.Context, string) (bool, error) { return true, nil }
			return s
		}, second: msg("E1", trustedCh, member, "")},
		{name: "store has seen the ts key only", seen: func() *fakeSeen {
			s := memSeen()
			s.EventSeenFn = func(_ context.Context, k string) (bool, error) { return strings.HasPrefix(k, "ts:"), nil }
			return s
		}, second: msg("E9", trustedCh, member, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newDropFixture(t, worldRoster(), tt.seen(), nil)
			ctx := context.Background()
			if tt.first != nil {
				if err := f.h.Handle(ctx, tt.first); err != nil || !f.next.ran() {
					t.Fatalf("first delivery: err %v, next ran %v; want a pass", err, f.next.ran())
				}
				f.next.reset()
			}
			marked := len(f.seen.markCalls())
			if err := f.h.Handle(ctx, tt.second); err != nil {
				t.Fatalf("second delivery: %v", err)
			}
			if f.next.ran() {
				t.Error("next ran on a duplicate")
			}
			if got := testutil.ToFloat64(f.drops.WithLabelValues(pipeline.DropDuplicate)); got != 1 {
				t.Errorf("agent_chat_drops_total{reason=duplicate} = %v, want 1", got)
			}
			if got := f.seen.markCalls(); len(got) != marked {
				t.Errorf("MarkEvent called on the duplicate: %q", got[marked:])
			}
			if tt.first == nil {
				assertSpan(t, f.sr, "pipeline.drop", pipeline.OutcomeDrop, pipeline.DropDuplicate)
			}
		})
	}
}

// An event the inbox marked as it received it: the drop stage takes the
// outcome off the event and neither reads nor writes the store.
func TestDropMarkedByTheInbox(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		t.Run(fmt.Sprintf("fresh %v", fresh), func(t *testing.T) {
			seen := memSeen()
			seen.EventSeenFn = func(context.Context, string) (bool, error) {
				t.Error("EventSeen called for a marked event")
				return false, nil
			}
			f := newDropFixture(t, worldRoster(), seen, nil)
			ev := with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Marked, e.Fresh = true, fresh })
			if err := f.h.Handle(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if got := f.seen.markCalls(); len(got) != 0 {
				t.Errorf("MarkEvent called for a marked event: %q", got)
			}
			if fresh {
				f.assertPassed(t)
				// The twin that follows in this process is still a duplicate.
				f.next.reset()
				twin := with(msg("E2", trustedCh, member, ""), func(e *pipeline.Event) { e.Marked, e.Fresh = true, true })
				if err := f.h.Handle(context.Background(), twin); err != nil {
					t.Fatal(err)
				}
				if f.next.ran() {
					t.Error("a second event of the same channel+ts ran")
				}
				return
			}
			f.assertDropped(t, pipeline.DropDuplicate, 0)
		})
	}
}

func TestDedupeKey(t *testing.T) {
	for _, tt := range []struct {
		ev   *pipeline.Event
		want string
	}{
		{msg("E1", trustedCh, member, ""), "ts:" + trustedCh + ":" + msg("E1", trustedCh, member, "").TS},
		{click("action:T1", randomCh, outsider), "id:action:T1"},
		{&pipeline.Event{Kind: pipeline.KindMessage}, ""},
	} {
		if got := pipeline.DedupeKey(tt.ev); got != tt.want {
			t.Errorf("DedupeKey(%s %s) = %q, want %q", tt.ev.Kind, tt.ev.ID, got, tt.want)
		}
	}
}

func click(id, channel, user string) *pipeline.Event {
	return &pipeline.Event{ID: id, Kind: pipeline.KindAction, Type: "block_actions", ChannelID: channel,
		UserID: user, Action: &pipeline.Action{ActionID: pipeline.ActionApprove, Value: "A1", MessageTS: "1.0"}}
}

// TestDropClicks: a click passes the trust layers like a message (the
// approval gate then judges who decides); blocked users and redeliveries
// are dropped too; a /1on1 lock holds words, not clicks.
func TestDropClicks(t *testing.T) {
	tests := []struct {
		name string
		ev   *pipeline.Event
		want string
	}{
		{"stranger in restricted channel", click("action:T1", randomCh, outsider), pipeline.DropWhitelist},
		{"non-manager in closed DM", click("action:T1", dmCh, member), pipeline.DropDM},
		{"manager in restricted channel", click("action:T1", randomCh, manager), ""},
		{"manager in DM", click("action:T1", dmCh, manager), ""},
		{"member in trusted channel", click("action:T1", trustedCh, member), ""},
		{"in a thread locked to someone else", with(click("action:T1", trustedCh, member), func(e *pipeline.Event) { e.ThreadTS = "1.0" }), ""},
		{"blocked user", click("action:T1", trustedCh, blocked), pipeline.DropBlocked},
		{"no user", click("action:T1", trustedCh, ""), pipeline.DropNotSpeech},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			locks := &fakeLocks{ThreadLockFn: func(context.Context, string) (string, error) {
				t.Error("ThreadLock consulted for a click")
				return outsider, nil
			}}
			f := newDropFixture(t, worldRoster(), memSeen(), locks)
			if err := f.h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				f.assertPassed(t)
				if got := strings.Join(f.seen.markCalls(), ","); got != "id:action:T1" {
					t.Errorf("marked %q, want the event id only", got)
				}
				return
			}
			f.assertDropped(t, tt.want, 0)
			assertSpan(t, f.sr, "pipeline.drop", pipeline.OutcomeDrop, tt.want)
		})
	}
}

func TestDropStoreErrors(t *testing.T) {
	errStore := errors.New("database is locked")
	failOnce := func(fn *func(context.Context, string) (bool, error)) func(*fakeSeen) {
		return func(s *fakeSeen) {
			orig, failed := *fn, false
			*fn = func(ctx context.Context, k string) (bool, error) {
				if !failed {
					failed = true
					return false, errStore
				}
				return orig(ctx, k)
			}
		}
	}
	tests := []struct {
		name   string
		script func(*fakeSeen)
	}{
		{"EventSeen fails", func(s *fakeSeen) { failOnce(&s.EventSeenFn)(s) }},
		{"MarkEvent fails on the first key", func(s *fakeSeen) { failOnce(&s.MarkEventFn)(s) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := memSeen()
			tt.script(seen)
			f := newDropFixture(t, worldRoster(), seen, nil)

			err := f.h.Handle(context.Background(), msg("E1", trustedCh, member, ""))
			if !errors.Is(err, errStore) {
				t.Fatalf("err = %v, want the store error", err)
			}
			if f.next.ran() {
				t.Error("next ran after a store error")
			}
			for _, r := range allDropReasons {
				if got := testutil.ToFloat64(f.drops.WithLabelValues(r)); got != 0 {
					t.Errorf("a store error counted as drop %q", r)
				}
			}
			assertErrorSpan(t, f.sr, "pipeline.drop")

			// The in-memory dedupe was rolled back: the retry passes.
			retry := with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Retry = 1 })
			if err := f.h.Handle(context.Background(), retry); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if !f.next.ran() {
				t.Error("retry after a store error was dropped")
			}
		})
	}
}

// TestDropPartialMarkIsRetried: the store recorded the event id, then failed
// to record channel+ts. The delivery fails, so the platform retries it; the
// retry must be handled, not dropped as a duplicate of a delivery that was
// never handled.
func TestDropPartialMarkIsRetried(t *testing.T) {
	seen := memSeen()
	orig, failed := seen.MarkEventFn, false
	seen.MarkEventFn = func(ctx context.Context, k string) (bool, error) {
		if strings.HasPrefix(k, "ts:") && !failed {
			failed = true
			return false, errors.New("disk I/O error")
		}
		return orig(ctx, k)
	}
	f := newDropFixture(t, worldRoster(), seen, nil)
	if err := f.h.Handle(context.Background(), msg("E1", trustedCh, member, "")); err == nil {
		t.Fatal("first delivery: no error from a failed MarkEvent")
	}
	retry := with(msg("E1", trustedCh, member, ""), func(e *pipeline.Event) { e.Retry = 1 })
	if err := f.h.Handle(context.Background(), retry); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !f.next.ran() {
		t.Errorf("retry dropped as %v: the first delivery's partial MarkEvent left id:E1 in the store, so the message is never answered",
			droppedAs(f.drops))
	}
}

func droppedAs(drops dropCounter) []string {
	var out []string
	for _, r := range allDropReasons {
		if testutil.ToFloat64(drops.WithLabelValues(r)) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func TestDropMarkNotFresh(t *testing.T) {
	seen := memSeen()
	seen.MarkEventFn = func(context.Context, string) (bool, error) { return false, nil } // another process won
	f := newDropFixture(t, worldRoster(), seen, nil)
	if err := f.h.Handle(context.Background(), msg("E1", trustedCh, member, "")); err != nil {
		t.Fatal(err)
	}
	if f.next.ran() {
		t.Error("next ran although MarkEvent said the key was not fresh")
	}
	if got := testutil.ToFloat64(f.drops.WithLabelValues(pipeline.DropDuplicate)); got != 1 {
		t.Errorf("duplicate drops = %v, want 1", got)
	}
	assertSpan(t, f.sr, "pipeline.drop", pipeline.OutcomeDrop, pipeline.DropDuplicate)
}

func TestDropLockError(t *testing.T) {
	errLock := errors.New("lock lookup failed")
	locks := &fakeLocks{ThreadLockFn: func(context.Context, string) (string, error) { return "", errLock }}
	tracer, sr := newTracer()
	next := &terminal{}
	seen := memSeen()
	h := pipeline.Chain(next, pipeline.NewDrop(tracer, nil, pipeline.DropDeps{
		Roster: worldRoster(), Seen: seen, Locks: locks, Self: selfFn, Drops: newDropCounter(), Log: discardLog()}))
	err := h.Handle(context.Background(), msg("E1", trustedCh, member, "1.0"))
	if !errors.Is(err, errLock) {
		t.Fatalf("err = %v, want the lock error", err)
	}
	if got := pipeline.FailedStage(err); got != "drop" {
		t.Errorf("FailedStage = %q, want drop", got)
	}
	if next.ran() || len(seen.markCalls()) != 0 {
		t.Errorf("next ran %v, marked %q; want neither", next.ran(), seen.markCalls())
	}
	assertErrorSpan(t, sr, "pipeline.drop")
}

func TestDropNextErrorIsReturned(t *testing.T) {
	f := newDropFixture(t, worldRoster(), memSeen(), nil)
	f.next.err = errors.New("later stage failed")
	if err := f.h.Handle(context.Background(), msg("E1", trustedCh, member, "")); err != f.next.err {
		t.Fatalf("err = %v, want next's error", err)
	}
	assertSpan(t, f.sr, "pipeline.drop", pipeline.OutcomeError, "")
}

// TestDropConcurrentDeliveries: of concurrent deliveries of one event, one
// passes.
func TestDropConcurrentDeliveries(t *testing.T) {
	f := newDropFixture(t, worldRoster(), memSeen(), nil)
	const n = 16
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.h.Handle(context.Background(), msg("E1", trustedCh, member, "")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if f.next.calls != 1 {
		t.Errorf("next ran %d times, want 1", f.next.calls)
	}
	if got := testutil.ToFloat64(f.drops.WithLabelValues(pipeline.DropDuplicate)); got != n-1 {
		t.Errorf("duplicate drops = %v, want %d", got, n-1)
	}
}
