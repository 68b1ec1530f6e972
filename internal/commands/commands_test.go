package commands_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

const (
	bot      = "U0BOT"
	manager  = "U0MGR"
	backup   = "U0BAK"
	approver = "U0OPS"
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
`

// fakeEngine is the engine's control surface: each method calls its function.
type fakeEngine struct {
	abort        func(threadKey string) bool
	abortChannel func(channelID string) int
	compact      func(ctx context.Context, sessionID string) (int, error)
}

func (f *fakeEngine) Abort(threadKey string) bool       { return f.abort(threadKey) }
func (f *fakeEngine) AbortChannel(channelID string) int { return f.abortChannel(channelID) }
func (f *fakeEngine) Compact(ctx context.Context, sessionID string) (int, error) {
	return f.compact(ctx, sessionID)
}

// fakeIngester runs /ingest.
type fakeIngester struct {
	ingest func(ctx context.Context, label, userID string, out pipeline.Outbox) error
}

func (f *fakeIngester) Ingest(ctx context.Context, label, userID string, out pipeline.Outbox) error {
	return f.ingest(ctx, label, userID, out)
}

// outbox records what the commands say.
type outbox struct {
	mu    sync.Mutex
	posts []string
}

func (o *outbox) Post(_ context.Context, markdown string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.posts = append(o.posts, markdown)
	return "", nil
}

func (o *outbox) Update(context.Context, string, string) error {
	return errors.New("commands do not edit")
}

func (o *outbox) Posts() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.posts)
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
	p, err := persona.Parse("SOUL.md", []byte(soul))
	if err != nil {
		t.Fatal(err)
	}
	engine := &fakeEngine{
		abort: func(string) bool { t.Error("unexpected Abort"); return false },
		abortChannel: func(string) int {
			t.Error("unexpected AbortChannel")
			return 0
		},
		compact: func(context.Context, string) (int, error) { t.Error("unexpected Compact"); return 0, nil },
	}
	return &harness{t: t, st: st, engine: engine, cmds: &commands.Commands{
		Store: st, Engine: engine, Persona: p, DefaultMode: pipeline.ModeAsk,
		Self: func() pipeline.Identity { return pipeline.Identity{UserID: bot, BotID: "B0BOT"} },
		Log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
}

func roleOf(user string) pipeline.Role {
	switch user {
	case manager:
		return pipeline.RoleManager
	case backup:
		return pipeline.RoleBackup
	case approver:
		return pipeline.RoleApprover
	}
	return pipeline.RoleMember
}

func access(user string) pipeline.Access {
	return pipeline.Access{UserID: user, Role: roleOf(user), Layer: pipeline.LayerTrusted, Mode: pipeline.ModeAsk}
}

// message is a message in the thread C1:1.0.
func message(user, text string) *pipeline.Event {
	return &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", ChannelID: "C1", ChannelType: pipeline.ChannelPublic,
		UserID: user, TS: "2.0", ThreadTS: "1.0", Text: text}
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
	out := &outbox{}
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

func TestMode(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ev     *pipeline.Event
		access pipeline.Access
		key    string // where the mode is stored
		mode   string // the stored mode ("" = none)
		wants  []string
		absent []string
	}{
		{name: "manager in a thread", ev: message(manager, "/mode bypass"), access: access(manager), key: "C1:1.0",
			mode: "bypass", wants: []string{"this thread", "`bypass`", "<@U0MGR>"}, absent: []string{"public"}},
		{name: "backup manager", ev: message(backup, "/mode plan"), access: access(backup), key: "C1:1.0", mode: "plan",
			wants: []string{"`plan`", "<@U0BAK>"}},
		{name: "approver", ev: message(approver, "/mode accept-edits"), access: access(approver), key: "C1:1.0",
			mode: "accept-edits", wants: []string{"`accept-edits`"}},
		{name: "member", ev: message(alice, "/mode bypass"), access: access(alice), key: "C1:1.0",
			wants: []string{"unauthorized"}},
		{name: "invalid mode", ev: message(manager, "/mode turbo"), access: access(manager), key: "C1:1.0",
			wants: []string{`unknown permission mode "turbo"`, "ask, accept-edits, bypass, plan or dont-ask"}},
		{name: "report", ev: message(alice, "/mode"), access: access(alice), key: "C1:1.0",
			wants: []string{"This thread's permission mode is `ask`"}},
		{name: "slash sets the channel", ev: slash(manager, "/mode", "dont-ask"), access: access(manager), key: "C1:",
			mode: "dont-ask", wants: []string{"this channel", "`dont-ask`"}},
		{name: "slash by a member", ev: slash(bob, "/mode", "bypass"), access: access(bob), key: "C1:",
			wants: []string{"unauthorized"}},
		{name: "allowed layer caps", ev: message(manager, "/mode bypass"),
			access: pipeline.Access{UserID: manager, Role: pipeline.RoleManager, Layer: pipeline.LayerAllowed, Mode: pipeline.ModeAsk},
			key:    "C1:1.0", mode: "bypass", wants: []string{"`bypass`", "public", "works as `ask`"}},
		{name: "allowed layer, a stricter mode", ev: message(manager, "/mode plan"),
			access: pipeline.Access{UserID: manager, Role: pipeline.RoleManager, Layer: pipeline.LayerAllowed, Mode: pipeline.ModeAsk},
			key:    "C1:1.0", mode: "plan", wants: []string{"`plan`"}, absent: []string{"works as"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			got := h.say(tt.ev, tt.access)
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
	for _, tt := range []struct {
		name     string
		ev       *pipeline.Event
		running  int
		want     string
		aborted  string
		channels string
	}{
		{name: "running turn", ev: message(alice, "/abort"), running: 1, want: "Stopped.", aborted: "C1:1.0"},
		{name: "nothing running", ev: message(alice, "/abort"), running: 0, want: "Nothing is running in this thread", aborted: "C1:1.0"},
		{name: "slash, running", ev: slash(alice, "/abort", ""), running: 2, want: "Stopped 2 running turn(s)", channels: "C1"},
		{name: "slash, nothing", ev: slash(alice, "/abort", ""), running: 0, want: "Nothing is running here", channels: "C1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			var aborted, channels []string
			h.engine.abort = func(key string) bool { aborted = append(aborted, key); return tt.running > 0 }
			h.engine.abortChannel = func(ch string) int { channels = append(channels, ch); return tt.running }
			wantIn(t, h.say(tt.ev, access(alice)), tt.want)
			if tt.aborted != "" && !slices.Equal(aborted, []string{tt.aborted}) {
				t.Errorf("Abort calls = %q, want [%s]", aborted, tt.aborted)
			}
			if tt.channels != "" && !slices.Equal(channels, []string{tt.channels}) {
				t.Errorf("AbortChannel calls = %q, want [%s]", channels, tt.channels)
			}
			if len(aborted)+len(channels) != 1 {
				t.Errorf("Abort %q and AbortChannel %q: want exactly one call", aborted, channels)
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
			out := &outbox{}
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
	h := newHarness(t)
	steps := []struct {
		user, text string
		want       string
		lockedBy   string
	}{
		{alice, "/1on1 off", "not locked", ""},
		{alice, "/1on1", "between <@U0ALICE> and the manager", alice},
		{alice, "/1on1", "between <@U0ALICE>", alice}, // the holder again
		{bob, "/1on1", "unauthorized: this thread is locked to <@U0ALICE>", alice},
		{bob, "/1on1 off", "unauthorized: only <@U0ALICE> or the manager", alice},
		{approver, "/1on1 off", "unauthorized", alice},
		{alice, "/1on1 please", "Use `/1on1`", alice},
		{alice, "/1on1 off", "released", ""},
		{bob, "/1on1", "between <@U0BOB>", bob},
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
	got := h.say(slash(bob, "/1on1", ""), access(bob))
	wantIn(t, got, "<@U0BOB>")
	if th := h.thread("C1:"); th.LockedBy != bob {
		t.Fatalf("slash /1on1: channel locked by %q, want %s", th.LockedBy, bob)
	}
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
			out := &outbox{}
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
			out := &outbox{}
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
