package commands_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

const (
	bot      = "U0BOT"
	manager  = "U0MGR"
	backup   = "U0BAK"
	approver = "U0OPS"  // scopes Bash, mcp__github__create_issue
	anyone   = "U0APP"  // an approver of anything
	moder    = "U0MODE" // an approver of scope mode
	skiller  = "U0SKL"  // an approver of scope skills
	alice    = "U0ALICE"
	bob      = "U0BOB"
)

const soul = `## Identity
- Name: Ada
- Role: release engineer

## Reporting
- Manager: U0MGR
- Backup manager: U0BAK

## Mandate
- Owns the release calendar.

## Approvers
- <@U0OPS>: Bash, mcp__github__create_issue ; ops on call
- <@U0APP>: anything
- <@U0MODE>: mode
- <@U0SKL>: skills
`

// roster is the parsed soul: who is what, and their scopes.
var roster = func() *persona.Persona {
	p, err := persona.Parse("SOUL.md", []byte(soul))
	if err != nil {
		panic(err)
	}
	return p
}()

// fakeEngine is the engine's control surface over a set of running turns
// (thread key → who started it), with the engine's rules: Abort and
// AbortChannel stop any, AbortOwn only the caller's own. calls records
// each call as "method key".
type fakeEngine struct {
	running map[string]string
	calls   []string
	compact func(ctx context.Context, sessionID string) (int, error)
}

func (f *fakeEngine) Abort(key string) bool {
	f.calls = append(f.calls, "Abort "+key)
	_, ok := f.running[key]
	delete(f.running, key)
	return ok
}

func (f *fakeEngine) AbortOwn(key, user string) (stopped, running bool) {
	f.calls = append(f.calls, "AbortOwn "+key)
	by, ok := f.running[key]
	if !ok || by != user {
		return false, ok
	}
	delete(f.running, key)
	return true, true
}

func (f *fakeEngine) AbortChannel(channelID string) int {
	f.calls = append(f.calls, "AbortChannel "+channelID)
	n := 0
	for key := range f.running {
		if strings.HasPrefix(key, channelID+":") {
			delete(f.running, key)
			n++
		}
	}
	return n
}

// Ended: the fake's turns end as they are stopped.
func (f *fakeEngine) Ended(key string) <-chan struct{} {
	if _, ok := f.running[key]; !ok {
		return nil
	}
	done := make(chan struct{})
	close(done)
	return done
}

func (f *fakeEngine) CompactTurn(ctx context.Context, _ *pipeline.Turn, sessionID string) (int, error) {
	return f.compact(ctx, sessionID)
}

// fakeIngester runs /ingest.
type fakeIngester struct {
	ingest func(ctx context.Context, label, userID string, out pipeline.Outbox) error
}

func (f *fakeIngester) Ingest(ctx context.Context, label, userID string, out pipeline.Outbox) error {
	return f.ingest(ctx, label, userID, out)
}

type harness struct {
	t      *testing.T
	st     *store.Store
	engine *fakeEngine
	cmds   *commands.Commands
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir()+"/agent.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	engine := &fakeEngine{
		running: map[string]string{},
		compact: func(context.Context, string) (int, error) { t.Error("unexpected Compact"); return 0, nil },
	}
	return &harness{t: t, st: st, engine: engine, cmds: &commands.Commands{
		Store: st, Engine: engine, Persona: roster, DefaultMode: pipeline.ModeAsk,
		Self: func() pipeline.Identity { return pipeline.Identity{UserID: bot, BotID: "B0BOT"} },
		Log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
}

func access(user string) pipeline.Access {
	return pipeline.Access{UserID: user, Role: roster.RoleOf(user), Scopes: roster.ScopesOf(user),
		Layer: pipeline.LayerTrusted, Mode: pipeline.ModeAsk}
}

// message is a message in the thread C1:1.0, which alice started.
func message(user, text string) *pipeline.Event {
	return &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", ChannelID: "C1", ChannelType: pipeline.ChannelPublic,
		UserID: user, TS: "2.0", ThreadTS: "1.0", ParentUserID: alice, Text: text}
}

// slash is a slash command typed in channel C1 (no thread).
func slash(user, name, args string) *pipeline.Event {
	return &pipeline.Event{Kind: pipeline.KindCommand, ChannelID: "C1", UserID: user,
		Command: &pipeline.Command{Name: name, Args: args}}
}

// run runs ev and returns what was said; it fails on an error or when ev
// was not handled.
func (h *harness) run(ev *pipeline.Event, a pipeline.Access) []string {
	h.t.Helper()
	out := &fake.Outbox{}
	handled, err := h.cmds.Command(context.Background(), ev, a, out)
	if err != nil || !handled {
		h.t.Fatalf("Command(%q) = %v, %v; want handled", ev.Text, handled, err)
	}
	return out.Posts()
}

// say runs ev and returns its single answer.
func (h *harness) say(ev *pipeline.Event, a pipeline.Access) string {
	h.t.Helper()
	posts := h.run(ev, a)
	if len(posts) != 1 {
		h.t.Fatalf("answers = %q, want one", posts)
	}
	return posts[0]
}

func (h *harness) thread(key string) store.Thread {
	h.t.Helper()
	th, err := h.st.GetThread(context.Background(), key)
	if errors.Is(err, store.ErrNotFound) {
		return store.Thread{}
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return th
}

func wantIn(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("answer %q lacks %q", got, w)
		}
	}
}

// modeRefused is the pinned refusal of /mode.
const modeRefused = "only the manager or an approver with scope mode can change the mode"

// usage is the pinned usage line of /mode.
const usage = "usage: /mode ask|accept-edits|bypass|plan|dont-ask"

func TestMode(t *testing.T) {
	for _, tt := range []struct {
		name     string
		ev       *pipeline.Event
		access   pipeline.Access
		noBypass string // Commands.NoBypass
		key      string // where the mode is stored
		mode     string // the stored mode ("" = none)
		wants    []string
		absent   []string
		exact    string // the whole answer, when pinned
	}{
		{name: "manager in a thread", ev: message(manager, "/mode bypass"), access: access(manager), key: "C1:1.0",
			mode: "bypass", wants: []string{"this thread", "`bypass`", "<@U0MGR>"}, absent: []string{"public"}},
		{name: "backup manager", ev: message(backup, "/mode plan"), access: access(backup), key: "C1:1.0", mode: "plan",
			wants: []string{"`plan`", "<@U0BAK>"}},
		{name: "approver of anything", ev: message(anyone, "/mode accept-edits"), access: access(anyone), key: "C1:1.0",
			mode: "accept-edits", wants: []string{"`accept-edits`"}},
		{name: "approver of scope mode", ev: message(moder, "/mode bypass"), access: access(moder), key: "C1:1.0",
			mode: "bypass", wants: []string{"`bypass`", "<@U0MODE>"}},
		{name: "approver of other scopes", ev: message(approver, "/mode accept-edits"), access: access(approver), key: "C1:1.0",
			exact: modeRefused},
		{name: "skills approver, bypass", ev: message(skiller, "/mode bypass"), access: access(skiller), key: "C1:1.0",
			exact: modeRefused},
		{name: "skills approver, slash bypass", ev: slash(skiller, "/mode", "bypass"), access: access(skiller), key: "C1:",
			exact: modeRefused},
		{name: "member", ev: message(alice, "/mode bypass"), access: access(alice), key: "C1:1.0", exact: modeRefused},
		{name: "invalid mode", ev: message(manager, "/mode turbo"), access: access(manager), key: "C1:1.0",
			exact: "That is not a permission mode. This thread's permission mode is `ask`.\n" + usage},
		{name: "invalid mode, member", ev: message(alice, "/mode <!channel>"), access: access(alice), key: "C1:1.0",
			wants: []string{"`ask`", usage}, absent: []string{"<!channel>"}},
		{name: "report", ev: message(alice, "/mode"), access: access(alice), key: "C1:1.0",
			exact: "This thread's permission mode is `ask`.\n" + usage},
		{name: "slash report", ev: slash(alice, "/mode", ""), access: access(alice), key: "C1:",
			exact: "This channel's permission mode is `ask`.\n" + usage},
		{name: "slash sets the channel", ev: slash(manager, "/mode", "dont-ask"), access: access(manager), key: "C1:",
			mode: "dont-ask", wants: []string{"this channel", "`dont-ask`"}},
		{name: "slash by a member", ev: slash(bob, "/mode", "bypass"), access: access(bob), key: "C1:", exact: modeRefused},
		{name: "bypass without a sandbox", ev: message(manager, "/mode bypass"), access: access(manager),
			noBypass: "no kernel sandbox", key: "C1:1.0", exact: "bypass is refused here: no kernel sandbox"},
		{name: "another mode without a sandbox", ev: message(manager, "/mode accept-edits"), access: access(manager),
			noBypass: "no kernel sandbox", key: "C1:1.0", mode: "accept-edits", wants: []string{"`accept-edits`"}},
		{name: "allowed layer caps", ev: message(manager, "/mode bypass"),
			access: pipeline.Access{UserID: manager, Role: pipeline.RoleManager, Layer: pipeline.LayerAllowed, Mode: pipeline.ModeAsk},
			key:    "C1:1.0", mode: "bypass", wants: []string{"`bypass`", "public", "works as `ask`"}},
		{name: "allowed layer, a stricter mode", ev: message(manager, "/mode plan"),
			access: pipeline.Access{UserID: manager, Role: pipeline.RoleManager, Layer: pipeline.LayerAllowed, Mode: pipeline.ModeAsk},
			key:    "C1:1.0", mode: "plan", wants: []string{"`plan`"}, absent: []string{"works as"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.cmds.NoBypass = tt.noBypass
			got := h.say(tt.ev, tt.access)
			if tt.exact != "" && got != tt.exact {
				t.Errorf("answer = %q, want %q", got, tt.exact)
			}
			wantIn(t, got, tt.wants...)
			for _, no := range tt.absent {
				if strings.Contains(got, no) {
					t.Errorf("answer %q should not say %q", got, no)
				}
			}
			if th := h.thread(tt.key); th.Mode != tt.mode {
				t.Fatalf("mode under %q = %q, want %q", tt.key, th.Mode, tt.mode)
			}
			other := map[string]string{"C1:1.0": "C1:", "C1:": "C1:1.0"}[tt.key]
			if th := h.thread(other); th.Mode != "" {
				t.Fatalf("mode leaked to %q: %q", other, th.Mode)
			}
		})
	}
}

func TestAbort(t *testing.T) {
	const (
		stopped = "aborted: I stopped the running turn"
		nothing = "aborted: nothing was running."
		refused = "unauthorized: only the person who started this turn"
	)
	for _, tt := range []struct {
		name    string
		ev      *pipeline.Event
		running map[string]string // thread key → who started its turn
		want    string
		calls   []string
		left    []string // the turns still running after
	}{
		{name: "the starter", ev: message(alice, "/abort"), running: map[string]string{"C1:1.0": alice},
			want: stopped, calls: []string{"AbortOwn C1:1.0"}},
		{name: "a member, another's turn", ev: message(bob, "/abort"), running: map[string]string{"C1:1.0": alice},
			want: refused, calls: []string{"AbortOwn C1:1.0"}, left: []string{"C1:1.0"}},
		{name: "a member, nothing running", ev: message(bob, "/abort"),
			want: nothing, calls: []string{"AbortOwn C1:1.0"}},
		{name: "the manager, another's turn", ev: message(manager, "/abort"), running: map[string]string{"C1:1.0": alice},
			want: stopped, calls: []string{"Abort C1:1.0"}},
		{name: "an approver of any scope", ev: message(skiller, "/abort"), running: map[string]string{"C1:1.0": alice},
			want: stopped, calls: []string{"Abort C1:1.0"}},
		{name: "the manager, nothing running", ev: message(manager, "/abort"), want: nothing, calls: []string{"Abort C1:1.0"}},
		{name: "slash, approver", ev: slash(approver, "/abort", ""),
			running: map[string]string{"C1:1.0": alice, "C1:3.0": bob, "C2:1.0": bob},
			want:    "aborted: I stopped 2 running turn(s)", calls: []string{"AbortChannel C1"}, left: []string{"C2:1.0"}},
		{name: "slash, backup, nothing", ev: slash(backup, "/abort", ""), want: nothing, calls: []string{"AbortChannel C1"}},
		{name: "slash, a member", ev: slash(alice, "/abort", ""), running: map[string]string{"C1:1.0": alice, "C1:3.0": bob},
			want: "unauthorized: only the manager, the backup manager or an approver can stop every turn", left: []string{"C1:1.0", "C1:3.0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			maps.Copy(h.engine.running, tt.running)
			wantIn(t, h.say(tt.ev, access(tt.ev.UserID)), tt.want)
			if !slices.Equal(h.engine.calls, tt.calls) {
				t.Errorf("engine calls = %q, want %q", h.engine.calls, tt.calls)
			}
			if left := slices.Sorted(maps.Keys(h.engine.running)); !slices.Equal(left, tt.left) {
				t.Errorf("turns still running = %q, want %q", left, tt.left)
			}
		})
	}
}

// stopClick is user's click on the stop button of the session of thread
// C1:1.0.
func stopClick(user string) *pipeline.Event {
	return &pipeline.Event{ID: "EvStop", Kind: pipeline.KindStop, Type: "agent_session_stopped", ChannelID: "C1",
		ChannelType: pipeline.ChannelPublic, UserID: user, TS: "9.0", ThreadTS: "1.0", Stop: &pipeline.Stop{}}
}

// The stop button is the thread's /abort, with its rule of who may: the
// person who started the running turn, the manager, the backup manager,
// an approver; anyone else is refused and the turn goes on. With nothing
// running, the session is moved off processing (the platform leaves it
// there otherwise).
func TestStopButton(t *testing.T) {
	const refused = "unauthorized: only the person who started this turn"
	for _, tt := range []struct {
		name     string
		by       string
		running  map[string]string // thread key → who started its turn
		want     string
		calls    []string
		left     []string
		sessions []string
	}{
		{name: "the starter", by: alice, running: map[string]string{"C1:1.0": alice},
			want: "stopped by <@U0ALICE>: I stopped the running turn", calls: []string{"AbortOwn C1:1.0"}},
		{name: "a member, another's turn", by: bob, running: map[string]string{"C1:1.0": alice},
			want: refused, calls: []string{"AbortOwn C1:1.0"}, left: []string{"C1:1.0"}},
		{name: "the manager, another's turn", by: manager, running: map[string]string{"C1:1.0": alice},
			want: "stopped by <@U0MGR>", calls: []string{"Abort C1:1.0"}},
		{name: "the backup manager", by: backup, running: map[string]string{"C1:1.0": alice},
			want: "stopped by <@U0BAK>", calls: []string{"Abort C1:1.0"}},
		{name: "an approver of any scope", by: skiller, running: map[string]string{"C1:1.0": alice},
			want: "stopped by <@U0SKL>", calls: []string{"Abort C1:1.0"}},
		{name: "another thread's turn goes on", by: manager, running: map[string]string{"C1:3.0": alice},
			want: "stopped: nothing was running.", calls: []string{"Abort C1:1.0"}, left: []string{"C1:3.0"},
			sessions: []string{"C1/1.0 active"}},
		{name: "nothing running", by: alice, want: "stopped: nothing was running.", calls: []string{"AbortOwn C1:1.0"},
			sessions: []string{"C1/1.0 active"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			var sessions []string
			h.cmds.Sessions = func(_ context.Context, u pipeline.SessionUpdate) error {
				sessions = append(sessions, u.ChannelID+"/"+u.ThreadTS+" "+string(u.Status))
				return nil
			}
			maps.Copy(h.engine.running, tt.running)
			ev := stopClick(tt.by)
			wantIn(t, h.say(ev, access(tt.by)), tt.want)
			if stopped := strings.HasPrefix(tt.want, "stopped by"); ev.Stop.Stopped != stopped {
				t.Errorf("Stop.Stopped = %v, want %v", ev.Stop.Stopped, stopped)
			}
			if !slices.Equal(h.engine.calls, tt.calls) {
				t.Errorf("engine calls = %q, want %q", h.engine.calls, tt.calls)
			}
			if left := slices.Sorted(maps.Keys(h.engine.running)); !slices.Equal(left, tt.left) {
				t.Errorf("turns still running = %q, want %q", left, tt.left)
			}
			if !slices.Equal(sessions, tt.sessions) {
				t.Errorf("session updates = %q, want %q", sessions, tt.sessions)
			}
		})
	}
}

func TestCompact(t *testing.T) {
	boom := errors.New("model unavailable")
	for _, tt := range []struct {
		name    string
		session bool
		n       int
		err     error
		want    string
	}{
		{name: "no session", want: "no conversation here to compact"},
		{name: "compacted", session: true, n: 12, want: "Compacted: 12 older messages"},
		{name: "short history", session: true, n: 0, want: "short already"},
		{name: "compaction fails", session: true, err: boom},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.session {
				if err := h.st.CreateSession(context.Background(), store.Session{ID: "S1", ThreadKey: "C1:1.0"}); err != nil {
					t.Fatal(err)
				}
			}
			var compacted []string
			h.engine.compact = func(_ context.Context, id string) (int, error) {
				compacted = append(compacted, id)
				return tt.n, tt.err
			}
			out := &fake.Outbox{}
			handled, err := h.cmds.Command(context.Background(), message(alice, "/compact"), access(alice), out)
			if !handled {
				t.Fatal("not handled")
			}
			if tt.err != nil {
				var ue *pipeline.UserError
				if !errors.As(err, &ue) || !errors.Is(err, boom) || ue.Message == "" || strings.Contains(ue.Message, boom.Error()) {
					t.Fatalf("err = %#v, want a *pipeline.UserError wrapping the cause, whose message hides it", err)
				}
				if posts := out.Posts(); len(posts) != 0 {
					t.Fatalf("answers = %q; the agent stage posts the UserError", posts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if posts := out.Posts(); len(posts) != 1 || !strings.Contains(posts[0], tt.want) {
				t.Fatalf("answers = %q, want %q", posts, tt.want)
			}
			if want := map[bool][]string{true: {"S1"}}[tt.session]; !slices.Equal(compacted, want) {
				t.Fatalf("Compact calls = %q, want %q", compacted, want)
			}
		})
	}
}

// /compact is a model call: typed in a thread it takes a role or having
// started the thread, the slash form a role; a budget's refusal was told
// already and adds nothing.
func TestCompactWhoMayAndBudget(t *testing.T) {
	h := newHarness(t)
	if err := h.st.CreateSession(context.Background(), store.Session{ID: "S1", ThreadKey: "C1:1.0"}); err != nil {
		t.Fatal(err)
	}
	var calls int
	refused := false
	h.engine.compact = func(context.Context, string) (int, error) {
		calls++
		if refused {
			return 0, fmt.Errorf("wrapped: %w", agent.ErrBudgetRefused)
		}
		return 3, nil
	}
	for _, tt := range []struct {
		ev   *pipeline.Event
		a    pipeline.Access
		want string
	}{
		{message(bob, "/compact"), access(bob), "unauthorized: only the person who started this thread, the manager, the backup manager or an approver can compact it."},
		{slash(alice, "/compact", ""), access(alice), "unauthorized: only the manager, the backup manager or an approver can compact this channel's conversation"},
		{message(alice, "/compact"), access(alice), "Compacted: 3"},
		{message(approver, "/compact"), access(approver), "Compacted: 3"},
		{message(backup, "/compact"), access(backup), "Compacted: 3"},
	} {
		out := &fake.Outbox{}
		if _, err := h.cmds.Command(context.Background(), tt.ev, tt.a, out); err != nil {
			t.Fatal(err)
		}
		if posts := out.Posts(); len(posts) != 1 || !strings.HasPrefix(posts[0], tt.want) {
			t.Errorf("%s by %s: %q, want %q", tt.ev.Kind, tt.ev.UserID, posts, tt.want)
		}
	}
	if calls != 3 {
		t.Errorf("compactions = %d, want 3 (the refused ones made none)", calls)
	}
	refused = true
	out := &fake.Outbox{}
	if _, err := h.cmds.Command(context.Background(), message(alice, "/compact"), access(alice), out); err != nil || len(out.Posts()) != 0 {
		t.Errorf("refused by a budget: err %v, posts %q; want neither", err, out.Posts())
	}
}

func TestHelp(t *testing.T) {
	h := newHarness(t)
	a := access(alice)
	a.Layer, a.Mode = pipeline.LayerAllowed, pipeline.ModeAsk
	got := h.say(message(alice, "/help"), a)
	wantIn(t, got,
		"Ada, release engineer", "Owns the release calendar.",
		"Manager: <@U0MGR>", "backup <@U0BAK>", "may approve anything",
		"<@U0APP> approves: anything", "<@U0OPS> approves: Bash, mcp__github__create_issue",
		"Permission mode `ask` (allowed channel)",
		"`/mode <ask|accept-edits|bypass|plan|dont-ask>`", "`/abort`", "`/compact`", "`/help`", "`/1on1`", "`/1on1 off`", "`/ingest [label]`")
	if strings.Index(got, "<@U0APP>") > strings.Index(got, "<@U0OPS>") {
		t.Errorf("approvers not in a stable order: %q", got)
	}
	if slashed := h.say(slash(alice, "/help", ""), a); slashed != got {
		t.Errorf("slash /help = %q, want the same as in a thread", slashed)
	}
}

func TestOneOnOne(t *testing.T) {
	const refused = "unauthorized: only the person who started this thread"
	h := newHarness(t)
	steps := []struct {
		user, text string
		want       string
		lockedBy   string
	}{
		{alice, "/1on1 off", "not locked", ""},
		{alice, "/1on1", "1on1 mode: this thread is now between <@U0ALICE> and the manager", alice},
		{alice, "/1on1", "between <@U0ALICE>", alice}, // the holder again
		{bob, "/1on1", refused, alice},
		{bob, "/1on1 off", "unauthorized: only <@U0ALICE> or the manager", alice},
		{approver, "/1on1 off", "unauthorized", alice},
		{approver, "/1on1", "unauthorized: this thread is locked to <@U0ALICE>", alice},
		{alice, "/1on1 please", "Use `/1on1`", alice},
		{alice, "/1on1 off", "1on1 mode released", ""},
		{bob, "/1on1", refused, ""}, // not his thread
		{approver, "/1on1", "between <@U0OPS>", approver},
		{manager, "/1on1 OFF", "released", ""},
		{alice, "/1on1", "between <@U0ALICE>", alice},
		{backup, "/1on1 off", "released", ""},
		{alice, "/1on1", "between <@U0ALICE>", alice},
		{manager, "/1on1", "between <@U0MGR>", manager}, // the manager may take the thread over
	}
	for i, s := range steps {
		got := h.say(message(s.user, s.text), access(s.user))
		if !strings.Contains(got, s.want) {
			t.Fatalf("step %d: %s says %q: answer %q, want %q", i, s.user, s.text, got, s.want)
		}
		if th := h.thread("C1:1.0"); th.LockedBy != s.lockedBy {
			t.Fatalf("step %d: %s says %q: locked by %q, want %q", i, s.user, s.text, th.LockedBy, s.lockedBy)
		}
	}
	if th := h.thread("C1:"); th.LockedBy != "" {
		t.Fatalf("thread commands locked the channel: %q", th.LockedBy)
	}

	// A thread's root is its author's; a reply whose root author the
	// platform did not give is nobody's.
	root := &pipeline.Event{Kind: pipeline.KindMessage, ChannelID: "C1", UserID: bob, TS: "3.0", Text: "<@U0BOT> /1on1"}
	wantIn(t, h.say(root, access(bob)), "between <@U0BOB>")
	unknown := &pipeline.Event{Kind: pipeline.KindMessage, ChannelID: "C1", UserID: bob, TS: "4.1", ThreadTS: "4.0", Text: "/1on1"}
	wantIn(t, h.say(unknown, access(bob)), refused)
	if th := h.thread("C1:4.0"); th.LockedBy != "" {
		t.Fatalf("a reply of unknown root author locked its thread: %q", th.LockedBy)
	}

	// The slash form locks the whole channel: a role is needed.
	wantIn(t, h.say(slash(bob, "/1on1", ""), access(bob)), "unauthorized: only the manager, the backup manager or an approver can lock the whole channel")
	if th := h.thread("C1:"); th.LockedBy != "" {
		t.Fatalf("a member's slash /1on1 locked the channel to %q", th.LockedBy)
	}
	wantIn(t, h.say(slash(approver, "/1on1", ""), access(approver)), "1on1 mode: this channel is now between <@U0OPS>")
	if th := h.thread("C1:"); th.LockedBy != approver {
		t.Fatalf("slash /1on1: channel locked by %q, want %s", th.LockedBy, approver)
	}
	wantIn(t, h.say(slash(approver, "/1on1", "off"), access(approver)), "1on1 mode released")
}

func TestIngest(t *testing.T) {
	for _, tt := range []struct {
		name     string
		user     string
		ingester bool
		want     string
		label    string
	}{
		{name: "member", user: alice, ingester: true, want: "unauthorized"},
		{name: "approver, no knowledge base", user: approver, want: "manifest.agent_knowledge not set"},
		{name: "manager, no knowledge base", user: manager, want: "manifest.agent_knowledge not set"},
		{name: "approver", user: approver, ingester: true, want: "ingested 2 raw file(s)", label: "runbooks"},
		{name: "backup manager", user: backup, ingester: true, want: "ingested 2 raw file(s)", label: "runbooks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			var calls []string
			if tt.ingester {
				h.cmds.Ingest = &fakeIngester{ingest: func(ctx context.Context, label, userID string, out pipeline.Outbox) error {
					calls = append(calls, label+"/"+userID)
					_, err := out.Post(ctx, "ingested 2 raw file(s); 1 wiki pages changed; pushed abc1234")
					return err
				}}
			}
			wantIn(t, h.say(message(tt.user, "/ingest  runbooks "), access(tt.user)), tt.want)
			var want []string
			if tt.label != "" {
				want = []string{tt.label + "/" + tt.user}
			}
			if !slices.Equal(calls, want) {
				t.Fatalf("Ingest calls = %q, want %q", calls, want)
			}
		})
	}
}

func TestNotACommand(t *testing.T) {
	for _, tt := range []struct {
		name string
		ev   *pipeline.Event
	}{
		{"a path", message(alice, "/etc/hosts is broken")},
		{"a path after the mention", message(alice, "<@U0BOT> /etc/hosts is broken")},
		{"unknown word", message(alice, "/frobnicate now")},
		{"plain text", message(alice, "please run /mode bypass")},
		{"mention of someone else first", message(alice, "<@U0BOB> /mode bypass")},
		{"empty", message(alice, "")},
		{"a click", &pipeline.Event{Kind: pipeline.KindAction, ChannelID: "C1", UserID: alice, Action: &pipeline.Action{ActionID: "approve"}}},
		{"command without its payload", &pipeline.Event{Kind: pipeline.KindCommand, ChannelID: "C1", UserID: alice}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			out := &fake.Outbox{}
			handled, err := h.cmds.Command(context.Background(), tt.ev, access(manager), out)
			if handled || err != nil || len(out.Posts()) != 0 {
				t.Fatalf("Command = %v, %v, answers %q; want not handled, silent", handled, err, out.Posts())
			}
			if th := h.thread("C1:1.0"); th.Mode != "" {
				t.Fatalf("mode set to %q", th.Mode)
			}
		})
	}
}

func TestUnknownSlashCommand(t *testing.T) {
	h := newHarness(t)
	got := h.say(slash(alice, "/frobnicate", "x"), access(alice))
	if got != "I don't know `/frobnicate`. Try `/help`." {
		t.Fatalf("answer = %q", got)
	}
}

func TestMentionAndCase(t *testing.T) {
	for _, tt := range []struct {
		name, text string
	}{
		{"mention first", "<@U0BOT> /mode bypass"},
		{"labelled mention", "<@U0BOT|ada> /mode bypass"},
		{"mention, spaces", "  <@U0BOT>   /mode   bypass  "},
		{"upper case command", "/MODE bypass"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			wantIn(t, h.say(message(manager, tt.text), access(manager)), "`bypass`")
			if th := h.thread("C1:1.0"); th.Mode != "bypass" {
				t.Fatalf("mode = %q, want bypass", th.Mode)
			}
		})
	}
	t.Run("slash name case", func(t *testing.T) {
		h := newHarness(t)
		wantIn(t, h.say(slash(manager, "/Mode", "plan"), access(manager)), "`plan`")
		if th := h.thread("C1:"); th.Mode != "plan" {
			t.Fatalf("mode = %q, want plan", th.Mode)
		}
	})
}

func TestStoreErrorsAreReturned(t *testing.T) {
	h := newHarness(t)
	h.st.Close() // every store call now fails
	for _, text := range []string{"/mode bypass", "/1on1", "/compact"} {
		t.Run(text, func(t *testing.T) {
			out := &fake.Outbox{}
			handled, err := h.cmds.Command(context.Background(), message(manager, text), access(manager), out)
			if !handled || err == nil {
				t.Fatalf("Command(%q) = %v, %v; want handled with the store's error", text, handled, err)
			}
			var ue *pipeline.UserError
			if errors.As(err, &ue) {
				t.Fatalf("a store failure became a UserError %q", ue.Message)
			}
		})
	}
}
