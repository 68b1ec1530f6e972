package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fakeEngagements is a pipeline.Engagements scripted by its fields; it
// records Engage as "key channel root ts true" and Disengage as
// "key ts false".
type fakeEngagements struct {
	EngagedFn func(ctx context.Context, threadKey string) (engaged, known bool, err error)
	// SetFn backs Engage (engaged true) and Disengage (engaged false,
	// channel and root "") and returns Engage's unseen mark.
	SetFn func(ctx context.Context, threadKey, channelID, rootTS, ts string, engaged bool) (string, error)
	// MarkSeenFn backs MarkSeen (pipeline.UnseenMarks).
	MarkSeenFn func(ctx context.Context, threadKey, from string) error

	mu      sync.Mutex
	lookups []string
	sets    []string
}

func (f *fakeEngagements) Engaged(ctx context.Context, threadKey string) (bool, bool, error) {
	f.mu.Lock()
	f.lookups = append(f.lookups, threadKey)
	f.mu.Unlock()
	return f.EngagedFn(ctx, threadKey)
}

func (f *fakeEngagements) Engage(ctx context.Context, threadKey, channelID, rootTS, ts string) (string, error) {
	f.mu.Lock()
	f.sets = append(f.sets, fmt.Sprintf("%s %s %s %s true", threadKey, channelID, rootTS, ts))
	f.mu.Unlock()
	return f.SetFn(ctx, threadKey, channelID, rootTS, ts, true)
}

func (f *fakeEngagements) Disengage(ctx context.Context, threadKey, ts string) error {
	f.mu.Lock()
	f.sets = append(f.sets, fmt.Sprintf("%s %s false", threadKey, ts))
	f.mu.Unlock()
	_, err := f.SetFn(ctx, threadKey, "", "", ts, false)
	return err
}

func (f *fakeEngagements) MarkSeen(ctx context.Context, threadKey, from string) error {
	return f.MarkSeenFn(ctx, threadKey, from)
}

// threadState is a thread as memEngagements keeps it.
type threadState struct {
	engaged bool
	unseen  string
}

// memEngagements behaves like the store, starting from the engaged threads:
// the unseen mark begins at the root of a thread never engaged (for a
// reply's mention) or at the message that disengaged it, and an earlier
// mark is kept.
func memEngagements(engaged ...string) *fakeEngagements {
	var mu sync.Mutex
	state := map[string]*threadState{}
	for _, k := range engaged {
		state[k] = &threadState{engaged: true}
	}
	return &fakeEngagements{
		EngagedFn: func(_ context.Context, k string) (bool, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			st, ok := state[k]
			return ok && st.engaged, ok, nil
		},
		SetFn: func(_ context.Context, k, _, root, ts string, e bool) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			st, ok := state[k]
			if !ok {
				st = &threadState{}
				state[k] = st
			}
			switch {
			case !e && st.unseen == "":
				st.unseen = ts
			case e && !st.engaged && st.unseen == "" && ts != root:
				st.unseen = root
			}
			st.engaged = e
			return st.unseen, nil
		},
		MarkSeenFn: func(_ context.Context, k, from string) error {
			mu.Lock()
			defer mu.Unlock()
			if st, ok := state[k]; ok && from != "" && st.unseen == from {
				st.unseen = ""
			}
			return nil
		},
	}
}

// reply is a message in the trusted channel; a reply in the thread rooted
// at 1.0 unless thread is "".
func reply(text, thread string) *pipeline.Event {
	ev := msg("E1", trustedCh, member, thread)
	ev.Text = text
	return ev
}

const engagedThread = "C0TEAM:1.0"

func TestEngage(t *testing.T) {
	tests := []struct {
		name     string
		ev       *pipeline.Event
		engaged  []string        // threads engaged before
		known    map[string]bool // threads disengaged at 1.5 (false) or engaged (true) before
		wantNext bool
		wantSets string // Engage and Disengage calls, ";"-separated
		unseen   string // the event's Unseen mark after the stage
		reason   string // the engage span's reason
	}{
		// Rule 1: a DM is always engaged.
		{name: "DM", ev: msg("E1", dmCh, member, ""), wantNext: true, reason: "dm"},
		{name: "DM thread reply", ev: msg("E1", dmCh, member, "1.0"), wantNext: true, reason: "dm"},
		{name: "DM mentioning another user", ev: with(msg("E1", dmCh, manager, "1.0"), func(e *pipeline.Event) { e.Text = "ask <@U0ALICE>" }),
			wantNext: true, reason: "dm"},

		// Rule 2: a mention of the bot engages the thread.
		{name: "app_mention at top level", ev: with(reply("<@U0BOT> hi", ""), func(e *pipeline.Event) { e.Type = "app_mention" }),
			wantNext: true, wantSets: "C0TEAM:2.0 C0TEAM 2.0 2.0 true", reason: "mention"},
		{name: "app_mention in a thread", ev: with(reply("<@U0BOT> hi", "1.0"), func(e *pipeline.Event) { e.Type = "app_mention" }),
			wantNext: true, wantSets: "C0TEAM:1.0 C0TEAM 1.0 2.0 true", unseen: "1.0", reason: "mention"},
		{name: "app_mention without the mention in text", ev: with(reply("hi", ""), func(e *pipeline.Event) { e.Type = "app_mention" }),
			wantNext: true, wantSets: "C0TEAM:2.0 C0TEAM 2.0 2.0 true", reason: "mention"},
		{name: "message text mentioning the bot", ev: reply("hey <@U0BOT> look", ""),
			wantNext: true, wantSets: "C0TEAM:2.0 C0TEAM 2.0 2.0 true", reason: "mention"},
		{name: "mention with a label", ev: reply("<@U0BOT|persona> look", "1.0"),
			wantNext: true, wantSets: "C0TEAM:1.0 C0TEAM 1.0 2.0 true", unseen: "1.0", reason: "mention"},
		{name: "mention re-engages a disengaged thread", ev: reply("<@U0BOT> back", "1.0"), known: map[string]bool{engagedThread: false},
			wantNext: true, wantSets: "C0TEAM:1.0 C0TEAM 1.0 2.0 true", unseen: "1.5", reason: "mention"},
		{name: "mentioning the bot and another user engages", ev: reply("<@U0BOT> ask <@U0BOB>", "1.0"), engaged: []string{engagedThread},
			wantNext: true, wantSets: "C0TEAM:1.0 C0TEAM 1.0 2.0 true", reason: "mention"},

		// Rule 3: a plain reply in an engaged thread is handled.
		{name: "plain reply in engaged thread", ev: reply("and then?", "1.0"), engaged: []string{engagedThread},
			wantNext: true, reason: "engaged_thread"},
		{name: "plain reply in thread not engaged", ev: reply("and then?", "1.0"), reason: "not_engaged"},
		{name: "plain reply in disengaged thread", ev: reply("and then?", "1.0"), known: map[string]bool{engagedThread: false},
			reason: "not_engaged"},
		{name: "top-level message without mention", ev: reply("lunch?", ""), engaged: []string{"C0TEAM:2.0"}, reason: "not_engaged"},
		{name: "mpim without mention", ev: with(reply("hi", ""), func(e *pipeline.Event) { e.ChannelID = "G0GRP"; e.ChannelType = pipeline.ChannelMPIM }),
			reason: "not_engaged"},

		// Rule 4: mentioning another user disengages; that message is not answered.
		{name: "other user in engaged thread", ev: reply("<@U0BOB> can you take this?", "1.0"), engaged: []string{engagedThread},
			wantSets: "C0TEAM:1.0 2.0 false", reason: "disengaged"},
		{name: "other user with label in engaged thread", ev: reply("cc <@U0BOB|bob>", "1.0"), engaged: []string{engagedThread},
			wantSets: "C0TEAM:1.0 2.0 false", reason: "disengaged"},
		{name: "user whose id starts with the bot's", ev: reply("<@U0BOT2> yours", "1.0"), engaged: []string{engagedThread},
			wantSets: "C0TEAM:1.0 2.0 false", reason: "disengaged"},
		{name: "other user in thread not engaged", ev: reply("<@U0BOB> hi", "1.0"), reason: "not_engaged"},
		{name: "other user at top level", ev: reply("<@U0BOB> hi", ""), reason: "not_engaged"},
		{name: "channel and special mentions are not users", ev: reply("<#C0PUB|pub> <!here> see", "1.0"), engaged: []string{engagedThread},
			wantNext: true, reason: "engaged_thread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			threads := memEngagements(tt.engaged...)
			for k, e := range tt.known {
				_, _ = threads.SetFn(context.Background(), k, "C0TEAM", "1.0", "1.5", e)
			}
			tracer, sr := newTracer()
			m := newStageMetrics()
			next := &terminal{}
			h := pipeline.Chain(next, pipeline.NewEngage(tracer, m, threads, selfFn, discardLog()))
			if err := h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if next.ran() != tt.wantNext {
				t.Errorf("next ran = %v, want %v", next.ran(), tt.wantNext)
			}
			if got := strings.Join(threads.sets, ";"); got != tt.wantSets {
				t.Errorf("Engage and Disengage calls = %q, want %q", got, tt.wantSets)
			}
			if tt.ev.Unseen != tt.unseen {
				t.Errorf("Unseen = %q, want %q", tt.ev.Unseen, tt.unseen)
			}
			outcome := pipeline.OutcomeDrop
			if tt.wantNext {
				outcome = pipeline.OutcomePass
			}
			assertSpan(t, sr, "pipeline.engage", outcome, tt.reason)
			if got := outcomeCount(m, "engage", outcome); got != 1 {
				t.Errorf("agent_pipeline_stage_total{engage,%s} = %v, want 1", outcome, got)
			}
		})
	}
}

// TestEngageStates walks one thread through the engagement state table.
func TestEngageStates(t *testing.T) {
	threads := memEngagements()
	next := &terminal{}
	tracer, _ := newTracer()
	h := pipeline.Chain(next, pipeline.NewEngage(tracer, nil, threads, selfFn, discardLog()))
	steps := []struct {
		name     string
		ev       *pipeline.Event
		wantNext bool
		unseen   string // the event's Unseen mark: where the messages the bot has not seen begin
	}{
		{"chatter before the bot is addressed", reply("anyone?", "1.0"), false, ""},
		{"mention engages: the thread from its root is unseen", reply("<@U0BOT> help", "1.0"), true, "1.0"},
		{"plain reply handled", reply("thanks, and?", "1.0"), true, ""},
		{"another user disengages", reply("<@U0BOB> over to you", "1.0"), false, ""},
		{"plain reply after disengagement ignored", reply("ok", "1.0"), false, ""},
		{"mention engages again: unseen from the disengagement", reply("<@U0BOT> one more", "1.0"), true, "2.3"},
		{"plain reply handled again", reply("great", "1.0"), true, ""},
	}
	for i, s := range steps {
		s.ev.TS = fmt.Sprintf("2.%d", i)
		next.reset()
		if err := h.Handle(context.Background(), s.ev); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if next.ran() != s.wantNext {
			t.Fatalf("%s: next ran = %v, want %v", s.name, next.ran(), s.wantNext)
		}
		if s.ev.Unseen != s.unseen {
			t.Fatalf("%s: Unseen = %q, want %q", s.name, s.ev.Unseen, s.unseen)
		}
		if i == 1 {
			// The turn stored them: the store's MarkSeen.
			_ = threads.MarkSeen(context.Background(), engagedThread, s.ev.Unseen)
		}
	}
}

func TestEngagePassesOtherKinds(t *testing.T) {
	tests := []struct {
		name string
		ev   *pipeline.Event
	}{
		{"command", &pipeline.Event{ID: "command:T1", Kind: pipeline.KindCommand, ChannelID: trustedCh, UserID: member,
			Command: &pipeline.Command{Name: "/mode", Args: "plan"}}},
		{"click", click("action:T1", trustedCh, outsider)},
		{"click in a thread not engaged", with(click("action:T1", trustedCh, outsider), func(e *pipeline.Event) { e.ThreadTS = "1.0" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			threads := &fakeEngagements{
				EngagedFn: func(context.Context, string) (bool, bool, error) {
					t.Error("Engaged consulted")
					return false, false, nil
				},
				SetFn: func(context.Context, string, string, string, string, bool) (string, error) {
					t.Error("Engage or Disengage called")
					return "", nil
				},
			}
			tracer, sr := newTracer()
			next := &terminal{}
			h := pipeline.Chain(next, pipeline.NewEngage(tracer, nil, threads, selfFn, discardLog()))
			if err := h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if !next.ran() {
				t.Error("next did not run")
			}
			assertSpan(t, sr, "pipeline.engage", pipeline.OutcomePass, "")
		})
	}
}

func TestEngageStoreErrors(t *testing.T) {
	errStore := errors.New("store down")
	tests := []struct {
		name    string
		threads *fakeEngagements
		ev      *pipeline.Event
	}{
		{"Engaged fails", &fakeEngagements{
			EngagedFn: func(context.Context, string) (bool, bool, error) { return false, false, errStore },
		}, reply("plain", "1.0")},
		{"Engage fails", &fakeEngagements{
			SetFn: func(context.Context, string, string, string, string, bool) (string, error) { return "", errStore },
		}, reply("<@U0BOT> hi", "1.0")},
		{"Disengage fails", &fakeEngagements{
			EngagedFn: func(context.Context, string) (bool, bool, error) { return true, true, nil },
			SetFn:     func(context.Context, string, string, string, string, bool) (string, error) { return "", errStore },
		}, reply("<@U0BOB> hi", "1.0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tracer, sr := newTracer()
			next := &terminal{}
			h := pipeline.Chain(next, pipeline.NewEngage(tracer, nil, tt.threads, selfFn, discardLog()))
			if err := h.Handle(context.Background(), tt.ev); !errors.Is(err, errStore) {
				t.Fatalf("err = %v, want the store error", err)
			} else if got := pipeline.FailedStage(err); got != "engage" {
				t.Errorf("FailedStage = %q, want engage", got)
			}
			if next.ran() {
				t.Error("next ran after a store error")
			}
			assertErrorSpan(t, sr, "pipeline.engage")
		})
	}
}

func TestStripMention(t *testing.T) {
	tests := []struct {
		name, text, bot, want string
	}{
		{"at start", "<@U0BOT> deploy it", botUser, "deploy it"},
		{"middle", "please <@U0BOT> deploy it", botUser, "please deploy it"},
		{"end", "deploy it <@U0BOT>", botUser, "deploy it"},
		{"label form", "<@U0BOT|persona> deploy it", botUser, "deploy it"},
		{"twice", "<@U0BOT> a <@U0BOT> b", botUser, "a b"},
		{"no space after", "<@U0BOT>deploy", botUser, "deploy"},
		{"only one space after is removed", "a <@U0BOT>  b", botUser, "a  b"},
		{"another user kept", "<@U0BOB> deploy it", botUser, "<@U0BOB> deploy it"},
		{"id starting with the bot's kept", "<@U0BOT2> deploy it", botUser, "<@U0BOT2> deploy it"},
		{"id starting with the bot's, label form", "<@U0BOT2|other> hi", botUser, "<@U0BOT2|other> hi"},
		{"lookalike then the bot", "<@U0BOT2> and <@U0BOT> go", botUser, "<@U0BOT2> and go"},
		{"newlines preserved", "<@U0BOT> first line\nsecond line\n\n```\ncode\n```", botUser, "first line\nsecond line\n\n```\ncode\n```"},
		{"newline after mention", "<@U0BOT>\nline one\nline two", botUser, "line one\nline two"},
		{"unterminated", "<@U0BOT deploy", botUser, "<@U0BOT deploy"},
		{"no mention trims", "  plain text \n", botUser, "plain text"},
		{"unknown bot id trims", " <@U0BOT> hi ", "", "<@U0BOT> hi"},
		{"only the mention", "<@U0BOT>", botUser, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pipeline.StripMention(tt.text, tt.bot); got != tt.want {
				t.Errorf("StripMention(%q, %q) = %q, want %q", tt.text, tt.bot, got, tt.want)
			}
		})
	}
}
