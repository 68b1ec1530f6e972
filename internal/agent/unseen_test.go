package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// threadReader is a pipeline.ThreadReader over one thread, in one page;
// it counts its reads.
type threadReader struct {
	mu    sync.Mutex
	msgs  []pipeline.PostedMessage
	err   error
	reads int
}

func (r *threadReader) ThreadReplies(_ context.Context, q pipeline.RepliesQuery) (pipeline.MessagePage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.err != nil {
		return pipeline.MessagePage{}, r.err
	}
	return pipeline.MessagePage{Messages: r.msgs}, nil
}

func (r *threadReader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

// people: U0MGR is the manager, everyone else a member.
type people struct{}

func (people) RoleOf(id string) pipeline.Role {
	if id == "U0MGR" {
		return pipeline.RoleManager
	}
	return pipeline.RoleMember
}

func (people) IsBlocked(string) bool { return false }

// failingMarks fails its first n MarkSeen calls, as a crash between the
// turn's write and the mark's would leave it.
type failingMarks struct {
	*store.Store
	fail int
}

func (f *failingMarks) MarkSeen(ctx context.Context, key, from string) error {
	if f.fail > 0 {
		f.fail--
		return errors.New("store down")
	}
	return f.Store.MarkSeen(ctx, key, from)
}

// incident is a thread where people talked before calling the bot in: the
// root, two people, the bot's own earlier post, another bot, the call.
var incident = []pipeline.PostedMessage{
	{TS: "10.000100", UserID: "U0MGR", Text: "db is down"},
	{TS: "10.000200", UserID: "U0ALICE", Text: "since 9:02, password " + secret + " rotated?"},
	{TS: "10.000300", UserID: botID, BotID: "B0BOT", Text: "I saw the alert"},
	{TS: "10.000400", BotID: "B0PAGER", Subtype: "bot_message", Text: "PagerDuty: incident #7 opened", Files: []pipeline.File{{Name: "graph.png"}}},
	{TS: "10.000500", UserID: senderID, Text: "<@" + botID + "> what do we know?"},
}

// unseenEnv is an engine whose turns read the thread from reader, with
// the thread C1:10.000100 engaged by a reply's mention (its mark is the
// root).
func unseenEnv(t *testing.T, reader *threadReader, marks func(*store.Store) pipeline.UnseenMarks) *env {
	t.Helper()
	if marks == nil {
		marks = func(st *store.Store) pipeline.UnseenMarks { return st }
	}
	e := newEnv(t, config{unseen: func(st *store.Store) agent.ThreadContext {
		return &pipeline.ThreadContext{Reader: reader, People: people{}, Marks: marks(st), Self: func() pipeline.Identity {
			return pipeline.Identity{UserID: botID, BotID: "B0BOT"}
		}, Redact: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }}
	}})
	t.Cleanup(e.engine.Wait) // before the store closes
	return e
}

// mention is senderID's mention of the bot at ts in the incident thread,
// engaged through the store as the engage stage does.
func (e *env) mention(t *testing.T, ts, text string) (*pipeline.Turn, *fake.Outbox) {
	t.Helper()
	turn, out := e.turn(t, "10.000100", text, pipeline.RoleMember)
	turn.Event.TS, turn.Event.ThreadTS, turn.Event.ID = ts, "10.000100", "Ev"+ts
	unseen, err := e.store.Engage(t.Context(), turn.Event.ThreadKey(), "C1", "10.000100", ts)
	if err != nil {
		t.Fatal(err)
	}
	turn.Event.Unseen = unseen
	return turn, out
}

func (e *env) unseenMark(t *testing.T) string {
	t.Helper()
	th, err := e.store.GetThread(t.Context(), "C1:10.000100")
	if err != nil {
		t.Fatal(err)
	}
	return th.UnseenFrom
}

// roleTexts renders a request's messages as "role: text | text", the
// non-text blocks by type.
func roleTexts(req fake.AnthropicRequest) []string {
	var out []string
	for _, m := range req.ParsedMessages() {
		var parts []string
		for _, c := range m.Content {
			if c.Type == "text" {
				parts = append(parts, c.Text)
			} else {
				parts = append(parts, c.Type)
			}
		}
		out = append(out, m.Role+": "+strings.Join(parts, " | "))
	}
	return out
}

func TestTurnCarriesUnseenMessages(t *testing.T) {
	reader := &threadReader{msgs: incident}
	e := unseenEnv(t, reader, nil)
	e.fake.Enqueue(reply("On it."), fake.TextReply("Done."))
	turn, _ := e.mention(t, "10.000500", "<@"+botID+"> what do we know?")
	if err := e.engine.Turn(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"user: " + strings.Join([]string{
			"[runtime] Messages of this thread you had not seen, oldest first; your own posts among them are shown as yours. The message to you follows them.",
			pipeline.Envelope("U0MGR", "manager", "db is down"),
			pipeline.Envelope("U0ALICE", "member", "since 9:02, password [redacted] rotated?"),
		}, " | "),
		"assistant: I saw the alert",
		"user: " + pipeline.Envelope("B0PAGER", "bot", "PagerDuty: incident #7 opened\n(files: graph.png)") + " | " +
			pipeline.Envelope(senderID, "member", "what do we know?"),
	}
	reqs := e.fake.Requests()
	if got := roleTexts(reqs[0]); !slices.Equal(got, want) {
		t.Errorf("first request =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(string(reqs[0].Messages), secret) {
		t.Error("a secret in the thread reached the model")
	}
	if got := e.unseenMark(t); got != "" {
		t.Errorf("unseen mark after the turn = %q, want cleared", got)
	}
	wantRows := []string{"user:text,text,text", "assistant:text", "user:text,text", "assistant:tool_use", "user:tool_result", "assistant:text"}
	if got := e.history(t, turn.Session.ID()); !slices.Equal(got, wantRows) {
		t.Errorf("stored history = %q, want %q", got, wantRows)
	}

	// A second mention: the thread is engaged and nothing is unseen, so
	// nothing is read or sent again; what the first carried is the
	// prefix of the next request, byte for byte.
	e.fake.Enqueue(reply("Still on it."), fake.TextReply("Done."))
	turn2, _ := e.mention(t, "10.000700", "<@"+botID+"> and now?")
	if turn2.Event.Unseen != "" {
		t.Fatalf("second mention's mark = %q, want none", turn2.Event.Unseen)
	}
	if err := e.engine.Turn(t.Context(), turn2); err != nil {
		t.Fatal(err)
	}
	if reader.count() != 1 {
		t.Errorf("thread read %d times, want once", reader.count())
	}
	reqs = e.fake.Requests()
	next := reqs[2]
	if got := strings.Count(string(next.Messages), "db is down"); got != 1 {
		t.Errorf("the second turn's request carries the thread's message %d times, want once (from the history)", got)
	}
	if got := next.LastUserText(); got != pipeline.Envelope(senderID, "member", "and now?") {
		t.Errorf("second turn's message = %q", got)
	}
	prev, cur := rawMessages(t, reqs[1]), rawMessages(t, next)
	for i := range prev {
		if a, b := stripCacheControl(t, prev[i]), stripCacheControl(t, cur[i]); a != b {
			t.Errorf("message %d differs between turns:\nturn 1: %s\nturn 2: %s", i, a, b)
		}
	}

	// Compaction folds them into the summary like the rest.
	e.fake.Enqueue(fake.TextReply("The db went down at 9:02."))
	if n, err := e.engine.Compact(t.Context(), turn.Session.ID()); err != nil || n == 0 {
		t.Fatalf("Compact = %d, %v", n, err)
	}
	summariser := e.fake.Requests()[4]
	if !strings.Contains(string(summariser.Messages), "db is down") || !strings.Contains(string(summariser.Messages), "I saw the alert") {
		t.Errorf("the summariser did not read the thread's messages: %s", summariser.Messages)
	}
}

func TestTurnUnseenCapNote(t *testing.T) {
	reader := &threadReader{msgs: incident}
	e := newEnv(t, config{unseen: func(st *store.Store) agent.ThreadContext {
		return &pipeline.ThreadContext{Reader: reader, People: people{}, Marks: st, Max: 1,
			Self: func() pipeline.Identity { return pipeline.Identity{UserID: botID, BotID: "B0BOT"} }}
	}})
	t.Cleanup(e.engine.Wait)
	e.fake.Enqueue(reply("ok"), fake.TextReply(""))
	turn, _ := e.mention(t, "10.000500", "<@"+botID+"> what do we know?")
	if err := e.engine.Turn(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	got := roleTexts(e.fake.Requests()[0])
	want := []string{"user: [runtime] Messages of this thread you had not seen, oldest first; your own posts among them are shown as yours. " +
		"The message to you follows them. (3 older ones are left out.) | " +
		pipeline.Envelope("B0PAGER", "bot", "PagerDuty: incident #7 opened\n(files: graph.png)") + " | " +
		pipeline.Envelope(senderID, "member", "what do we know?")}
	if !slices.Equal(got, want) {
		t.Errorf("request =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTurnUnseenReadFails(t *testing.T) {
	reader := &threadReader{err: errors.New("conversations.replies: missing_scope")}
	e := unseenEnv(t, reader, nil)
	e.fake.Enqueue(reply("ok"), fake.TextReply(""))
	turn, _ := e.mention(t, "10.000500", "<@"+botID+"> what do we know?")
	if err := e.engine.Turn(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	want := []string{"user: [runtime] This thread's earlier messages could not be read: you see only the message to you. | " +
		pipeline.Envelope(senderID, "member", "what do we know?")}
	if got := roleTexts(e.fake.Requests()[0]); !slices.Equal(got, want) {
		t.Errorf("request = %q, want %q", got, want)
	}
	if !strings.Contains(e.logs.String(), "missing_scope") {
		t.Errorf("the failure is not logged:\n%s", e.logs)
	}
	if got := e.unseenMark(t); got != "" {
		t.Errorf("unseen mark = %q, want cleared: the model was told", got)
	}
}

// A turn resumed after a crash that came between storing its input and
// clearing the mark goes on from the history: it neither reads the thread
// again nor stores its messages twice, and clears the mark.
func TestTurnUnseenResumed(t *testing.T) {
	reader := &threadReader{msgs: incident}
	marks := &failingMarks{fail: 1}
	e := unseenEnv(t, reader, func(st *store.Store) pipeline.UnseenMarks { marks.Store = st; return marks })
	e.fake.Enqueue(reply("On it."), fake.TextReply(""))
	turn, _ := e.mention(t, "10.000500", "<@"+botID+"> what do we know?")
	if err := e.engine.Turn(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	if got := e.unseenMark(t); got != "10.000100" {
		t.Fatalf("mark after the failed clear = %q, want the root's", got)
	}

	e.fake.Enqueue(fake.TextReply(""))
	again, _ := e.mention(t, "10.000500", "<@"+botID+"> what do we know?")
	again.Event.Resumed = true
	if again.Event.Unseen != "10.000100" {
		t.Fatalf("the resumed event's mark = %q, want the root's (the engage stage finds it again)", again.Event.Unseen)
	}
	if err := e.engine.Turn(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	if reader.count() != 1 {
		t.Errorf("thread read %d times, want once", reader.count())
	}
	stored, err := e.store.History(t.Context(), turn.Session.ID())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range stored {
		n += strings.Count(string(r.Content), "db is down")
	}
	if n != 1 {
		t.Errorf("the thread's message is stored %d times, want once", n)
	}
	if got := e.unseenMark(t); got != "" {
		t.Errorf("mark after the resumed turn = %q, want cleared", got)
	}
}
