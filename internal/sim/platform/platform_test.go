package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// chatTimeout bounds every wait of these tests; they finish in
// milliseconds unless something is broken.
const chatTimeout = 5 * time.Second

// runChat runs m until the test ends. It returns the delivered events,
// the cancel of Run's context and Run's result.
func runChat(t *testing.T, m *Chat) (<-chan *pipeline.Event, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan *pipeline.Event, 100)
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- m.Run(ctx, func(ev *pipeline.Event) { events <- ev })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(chatTimeout):
			t.Error("Run did not return after cancel")
		}
	})
	return events, cancel, done
}

func next(t *testing.T, events <-chan *pipeline.Event) *pipeline.Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(chatTimeout):
		t.Fatal("no event delivered")
		return nil
	}
}

func TestChatRunDeliversInOrder(t *testing.T) {
	m := &Chat{}
	var sent []*pipeline.Event
	// Injected before Run: queued, then delivered once Run starts.
	for i := range 3 {
		ev := &pipeline.Event{UserID: "U0ALICE", ChannelID: "C0TEAM", Text: fmt.Sprint("early ", i)}
		if err := m.Inject(ev); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, ev)
	}
	events, cancel, done := runChat(t, m)
	ts, err := m.Send("U0ALICE", "D0SIM", "", "late")
	if err != nil {
		t.Fatal(err)
	}
	var got []*pipeline.Event
	for range 4 {
		got = append(got, next(t, events))
	}
	for i, ev := range got[:3] {
		if ev.Text != sent[i].Text || ev.TS != sent[i].TS || ev.ID != sent[i].ID {
			t.Errorf("event %d = %q %s %s, want %q %s %s", i, ev.Text, ev.TS, ev.ID, sent[i].Text, sent[i].TS, sent[i].ID)
		}
		if ev == sent[i] {
			t.Errorf("event %d: Run delivered the caller's struct, want a copy", i)
		}
	}
	last := got[3]
	if last.Text != "late" || last.TS != ts || last.ChannelType != pipeline.ChannelIM || !last.IsDM() {
		t.Errorf("Send delivered %+v", last)
	}
	if last.Kind != pipeline.KindMessage || last.Type != "message" || last.TeamID != DefaultBot.TeamID || last.Received.IsZero() {
		t.Errorf("defaults not filled: %+v", last)
	}
	if got[0].ChannelType != pipeline.ChannelPublic {
		t.Errorf("channel type of C0TEAM = %q", got[0].ChannelType)
	}
	ids := map[string]bool{}
	for i, ev := range got {
		if ids[ev.ID] {
			t.Errorf("duplicate event id %s", ev.ID)
		}
		ids[ev.ID] = true
		if i > 0 && ev.TS <= got[i-1].TS {
			t.Errorf("ts not increasing: %s after %s", ev.TS, got[i-1].TS)
		}
	}
	if got[0].TS != "1700000000.000100" {
		t.Errorf("first ts = %s", got[0].TS)
	}
	if err := m.Wait(ctxTimeout(t), func(s Snapshot) bool { return s.Delivered == 4 && s.Queued == 0 }); err != nil {
		t.Fatal(err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(chatTimeout):
		t.Fatal("Run did not return after cancel")
	}
	if err := m.Inject(&pipeline.Event{UserID: "U0ALICE", ChannelID: "D0SIM"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Inject after Run = %v, want ErrClosed", err)
	}
	if err := m.Run(context.Background(), func(*pipeline.Event) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("second Run = %v, want ErrClosed", err)
	}

	// A service started again: Reopen, then a new Run delivers what is
	// injected meanwhile.
	m.Reopen()
	if err := m.Inject(&pipeline.Event{UserID: "U0ALICE", ChannelID: "D0SIM", Text: "again"}); err != nil {
		t.Fatalf("Inject after Reopen = %v", err)
	}
	again := make(chan *pipeline.Event, 1)
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- m.Run(ctx2, func(ev *pipeline.Event) { again <- ev }) }()
	select {
	case ev := <-again:
		if ev.Text != "again" {
			t.Errorf("delivered after Reopen: %q", ev.Text)
		}
	case <-time.After(chatTimeout):
		t.Fatal("nothing delivered after Reopen")
	}
	// Reopened while Run runs, the platform stays open when it returns:
	// what is injected meanwhile waits for the next Run.
	m.Reopen()
	cancel2()
	if err := <-done2; err != nil {
		t.Errorf("Run after Reopen = %v", err)
	}
	if err := m.Inject(&pipeline.Event{UserID: "U0ALICE", ChannelID: "D0SIM", Text: "while down"}); err != nil {
		t.Fatalf("Inject between two Runs = %v", err)
	}
	ctx3, cancel3 := context.WithCancel(context.Background())
	done3 := make(chan error, 1)
	go func() { done3 <- m.Run(ctx3, func(ev *pipeline.Event) { again <- ev }) }()
	select {
	case ev := <-again:
		if ev.Text != "while down" {
			t.Errorf("delivered by the third Run: %q", ev.Text)
		}
	case <-time.After(chatTimeout):
		t.Fatal("nothing delivered by the third Run")
	}
	cancel3()
	<-done3
	if err := m.Inject(&pipeline.Event{UserID: "U0ALICE", ChannelID: "D0SIM"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Inject after a Run not reopened = %v, want ErrClosed", err)
	}
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), chatTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestChatRunTwiceAtOnce(t *testing.T) {
	m := &Chat{}
	runChat(t, m)
	if err := m.Wait(ctxTimeout(t), func(s Snapshot) bool { return s.Running }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background(), func(*pipeline.Event) {}); err == nil {
		t.Error("second concurrent Run returned nil")
	}
}

func TestChatClickAndCommand(t *testing.T) {
	m := &Chat{}
	events, _, _ := runChat(t, m)
	if err := m.Click("U0APP", "C0TEAM", "1700000000.000100", "1700000000.000200", pipeline.ActionApprove, "appr-1"); err != nil {
		t.Fatal(err)
	}
	if err := m.Command("U0MGR", "C0TEAM", "/mode", " ask "); err != nil {
		t.Fatal(err)
	}
	click := next(t, events)
	if click.Kind != pipeline.KindAction || click.Type != "block_actions" || click.UserID != "U0APP" ||
		click.TS != "1700000000.000200" || click.ThreadTS != "1700000000.000100" ||
		click.Action == nil || *click.Action != (pipeline.Action{ActionID: "approve", Value: "appr-1", MessageTS: "1700000000.000200"}) {
		t.Errorf("click = %+v (action %+v)", click, click.Action)
	}
	cmd := next(t, events)
	if cmd.Kind != pipeline.KindCommand || cmd.Text != "/mode ask" || cmd.TS != "" || cmd.ThreadTS != "" ||
		cmd.Command == nil || cmd.Command.Name != "/mode" || cmd.Command.Args != "ask" {
		t.Errorf("command = %+v (command %+v)", cmd, cmd.Command)
	}
	if click.ID == cmd.ID || click.ID == "" {
		t.Errorf("ids %q and %q", click.ID, cmd.ID)
	}
	msgs := m.Messages()
	if len(msgs) != 2 || msgs[0].Op != OpInbound || msgs[0].Action == nil || msgs[1].Kind != pipeline.KindCommand {
		t.Errorf("transcript = %+v", msgs)
	}
}

func TestChatRecordsOutput(t *testing.T) {
	ctx := context.Background()
	m := &Chat{}
	root, err := m.Send("U0MGR", "C0TEAM", "", "<@U0SIMBOT> hi")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := m.Post(ctx, pipeline.Message{ChannelID: "C0TEAM", ThreadTS: root, Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Update(ctx, ts, pipeline.Message{ChannelID: "C0TEAM", Text: "second"}); err != nil {
		t.Fatal(err)
	}
	if err := m.PostEphemeral(ctx, "C0TEAM", root, "U0BOB", "only you"); err != nil {
		t.Fatal(err)
	}
	if err := m.Upload(ctx, pipeline.Upload{ChannelID: "C0TEAM", ThreadTS: root, Filename: "a.txt", Title: "A",
		Comment: "here", Content: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if err := m.SetStatus(ctx, "C0TEAM", root, "is thinking…"); err != nil {
		t.Fatal(err)
	}

	msgs := m.Messages()
	var ops []Op
	for i, e := range msgs {
		ops = append(ops, e.Op)
		if e.Seq != i+1 {
			t.Errorf("entry %d has Seq %d", i, e.Seq)
		}
	}
	want := []Op{OpInbound, OpPost, OpUpdate, OpEphemeral, OpUpload, OpStatus}
	if !slices.Equal(ops, want) {
		t.Fatalf("ops = %v, want %v", ops, want)
	}
	if n := m.Len(); n != len(msgs) {
		t.Errorf("Len() = %d, want %d, the entries Messages returns", n, len(msgs))
	}
	if e := msgs[0]; e.UserID != "U0MGR" || e.TS != root || e.Text != "<@U0SIMBOT> hi" {
		t.Errorf("inbound = %+v", e)
	}
	if e := msgs[1]; e.UserID != DefaultBot.UserID || e.ThreadTS != root || e.TS != ts || e.Text != "first" {
		t.Errorf("post = %+v", e)
	}
	if e := msgs[2]; e.TS != ts || e.ThreadTS != root || e.Text != "second" {
		t.Errorf("update = %+v", e)
	}
	if e := msgs[3]; e.To != "U0BOB" || e.ThreadTS != root || e.Text != "only you" || e.TS != "" {
		t.Errorf("ephemeral = %+v", e)
	}
	up := msgs[4]
	if up.TS == "" || up.Text != "here" || len(up.Files) != 1 || up.Files[0].Name != "a.txt" || string(up.Files[0].Content) != "hello" {
		t.Errorf("upload = %+v", up)
	}
	if e := msgs[5]; e.Text != "is thinking…" || e.ThreadTS != root {
		t.Errorf("status = %+v", e)
	}
	if cur, ok := m.Message(ts); !ok || cur.Text != "second" || cur.Op != OpPost {
		t.Errorf("Message(%s) = %+v, %v", ts, cur, ok)
	}
	if b, err := m.Download(ctx, pipeline.File{URL: up.Files[0].URL}, 100); err != nil || string(b) != "hello" {
		t.Errorf("Download of the upload = %q, %v", b, err)
	}
	if _, err := m.Download(ctx, pipeline.File{URL: up.Files[0].URL}, 2); !errors.Is(err, gateway.ErrFileTooLarge) {
		t.Errorf("Download over the limit = %v, want ErrFileTooLarge", err)
	}
	f := m.AddFile("b.csv", "text/csv", []byte("x,y"))
	if b, err := m.Download(ctx, f, 100); err != nil || string(b) != "x,y" || f.Size != 3 {
		t.Errorf("Download of an added file = %q, %v (%+v)", b, err, f)
	}
	if _, err := m.Download(ctx, pipeline.File{URL: "sim://files/nope"}, 100); err == nil {
		t.Error("Download of an unknown file succeeded")
	}
	var buf bytes.Buffer
	if n, err := m.DownloadTo(ctx, f, &buf, 3); err != nil || n != 3 || buf.String() != "x,y" {
		t.Errorf("DownloadTo = %d, %v, %q", n, err, buf.String())
	}
	buf.Reset()
	if _, err := m.DownloadTo(ctx, f, &buf, 2); !errors.Is(err, gateway.ErrFileTooLarge) || buf.Len() != 0 {
		t.Errorf("DownloadTo over the limit = %v with %d bytes written", err, buf.Len())
	}

	for name, err := range map[string]error{
		"update unknown ts":    m.Update(ctx, "1.000000", pipeline.Message{ChannelID: "C0TEAM", Text: "x"}),
		"update other channel": m.Update(ctx, ts, pipeline.Message{ChannelID: "C0PUB", Text: "x"}),
		"update upload":        m.Update(ctx, up.TS, pipeline.Message{ChannelID: "C0TEAM", Text: "x"}),
		"post without channel": func() error { _, err := m.Post(ctx, pipeline.Message{Text: "x"}); return err }(),
		"empty upload":         m.Upload(ctx, pipeline.Upload{ChannelID: "C0TEAM", Filename: "e.txt"}),
		"ephemeral to nobody":  m.PostEphemeral(ctx, "C0TEAM", "", "", "x"),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if n := len(m.Messages()); n != len(want) {
		t.Errorf("failed calls were recorded: %d entries", n)
	}
}

func TestChatCards(t *testing.T) {
	ctx := context.Background()
	m := &Chat{}
	card := &pipeline.Card{Kind: "approval", ID: "appr-1", Category: "Bash", Summary: "deploy prod",
		Actions: []string{pipeline.ActionApprove, pipeline.ActionDeny}}
	ts, err := m.Post(ctx, pipeline.Message{ChannelID: "D0SIM", ThreadTS: "1700000000.000100", Card: card})
	if err != nil {
		t.Fatal(err)
	}
	card.Actions[0] = "mutated" // the caller's card is not the recorded one
	if _, err := m.Post(ctx, pipeline.Message{ChannelID: "D0SIM", Text: "plain"}); err != nil {
		t.Fatal(err)
	}
	cards := m.Cards()
	if len(cards) != 1 || cards[0].TS != ts || cards[0].Resolved || !cards[0].Offers(pipeline.ActionApprove) ||
		cards[0].Offers(pipeline.ActionAlways) || cards[0].ThreadTS != "1700000000.000100" {
		t.Fatalf("cards = %+v", cards)
	}
	done := &pipeline.Card{Kind: "approval", ID: "appr-1", Summary: "deploy prod", Outcome: "approved by <@U0APP>"}
	if err := m.Update(ctx, ts, pipeline.Message{ChannelID: "D0SIM", Text: "approved", Card: done}); err != nil {
		t.Fatal(err)
	}
	cards = m.Cards()
	if len(cards) != 1 || !cards[0].Resolved || cards[0].Card.Outcome != "approved by <@U0APP>" || cards[0].Offers(pipeline.ActionApprove) {
		t.Fatalf("cards after update = %+v", cards)
	}
	// History: the post keeps its original card, the update the new one.
	msgs := m.Messages()
	if len(msgs[0].Card.Actions) != 2 || msgs[2].Card.Outcome == "" {
		t.Errorf("history = %+v / %+v", msgs[0].Card, msgs[2].Card)
	}
	// An update without a card removes it.
	if err := m.Update(ctx, ts, pipeline.Message{ChannelID: "D0SIM", Text: "gone"}); err != nil {
		t.Fatal(err)
	}
	if cards := m.Cards(); len(cards) != 0 {
		t.Errorf("cards after removal = %+v", cards)
	}
}

func TestChatWait(t *testing.T) {
	m := &Chat{}
	posted := func(s Snapshot) bool {
		return slices.ContainsFunc(s.Messages, func(e Entry) bool { return e.Op == OpPost && e.Text == "ack: done" })
	}
	errc := make(chan error, 1)
	ch := m.Changed()
	go func() { errc <- m.Wait(ctxTimeout(t), posted) }()
	if _, err := m.Post(context.Background(), pipeline.Message{ChannelID: "D0SIM", Text: "other"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(chatTimeout):
		t.Fatal("Changed not closed by a post")
	}
	if _, err := m.Post(context.Background(), pipeline.Message{ChannelID: "D0SIM", Text: "ack: done"}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Wait = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { errc <- m.Wait(ctx, func(Snapshot) bool { return false }) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled context = %v", err)
	}
}

func TestChatAuthTest(t *testing.T) {
	ctx := context.Background()
	if id, err := (&Chat{}).AuthTest(ctx); err != nil || id != DefaultBot || id.UserID != "U0SIMBOT" {
		t.Errorf("default AuthTest = %+v, %v", id, err)
	}
	bot := pipeline.Identity{UserID: "U0OTHER", BotID: "B0OTHER", TeamID: "T0OTHER"}
	m := &Chat{Bot: bot}
	if id, err := m.AuthTest(ctx); err != nil || id != bot {
		t.Errorf("AuthTest = %+v, %v", id, err)
	}
	ts, _ := m.Post(ctx, pipeline.Message{ChannelID: "D0SIM", Text: "x"})
	if e, _ := m.Message(ts); e.UserID != "U0OTHER" {
		t.Errorf("post author = %q", e.UserID)
	}
}

func TestChatObserverOrder(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	m := &Chat{}
	m.Observer = func(e Entry) {
		mu.Lock()
		seen = append(seen, e.Seq)
		mu.Unlock()
		_ = m.Messages() // reading from the observer is allowed
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := m.Post(context.Background(), pipeline.Message{ChannelID: "C0TEAM", Text: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 20 || !slices.IsSorted(seen) {
		t.Errorf("observer saw %v", seen)
	}
}

func TestChatRunReturnsOnCancel(t *testing.T) {
	m := &Chat{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, func(*pipeline.Event) {}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(chatTimeout):
		t.Fatal("Run did not return")
	}
}

func TestChatObserverMayPost(t *testing.T) {
	m := &Chat{}
	var texts []string
	m.Observer = func(e Entry) {
		texts = append(texts, e.Text)
		if e.Text == "ping" {
			if _, err := m.Post(context.Background(), pipeline.Message{ChannelID: "D0SIM", Text: "pong"}); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := m.Post(context.Background(), pipeline.Message{ChannelID: "D0SIM", Text: "ping"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(texts, []string{"ping", "pong"}) {
		t.Errorf("observer saw %q", texts)
	}
}

// A thread message carries its root's author, as the platform's
// parent_user_id does: a person's root, the bot's own post, or nobody's
// when the root is unknown.
func TestChatRootAuthor(t *testing.T) {
	m := &Chat{}
	events, _, _ := runChat(t, m)
	root, err := m.Send("U0ALICE", "C0TEAM", "", "<@U0BOT> hi")
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.ParentUserID != "" {
		t.Errorf("a root's ParentUserID = %q, want none", ev.ParentUserID)
	}
	if _, err := m.Send("U0BOB", "C0TEAM", root, "me too"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.ParentUserID != "U0ALICE" {
		t.Errorf("a reply's ParentUserID = %q, want U0ALICE", ev.ParentUserID)
	}
	posted, err := m.Post(context.Background(), pipeline.Message{ChannelID: "C0TEAM", Text: "a notice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Send("U0BOB", "C0TEAM", posted, "about it"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.ParentUserID != DefaultBot.UserID {
		t.Errorf("a reply to the bot's post: ParentUserID = %q, want %s", ev.ParentUserID, DefaultBot.UserID)
	}
	if _, err := m.Send("U0BOB", "C0TEAM", "1.0", "elsewhere"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, events); ev.ParentUserID != "" {
		t.Errorf("a reply to an unknown root: ParentUserID = %q, want none", ev.ParentUserID)
	}
}

// A channel mention arrives twice, as message and as app_mention with the
// same ts, recorded and delivered one after the other.
func TestChatInjectMention(t *testing.T) {
	m := &Chat{}
	events, _, _ := runChat(t, m)
	ev := &pipeline.Event{UserID: "U0ALICE", ChannelID: "C0TEAM", Text: "<@U0SIMBOT> hi"}
	twin := &pipeline.Event{Type: "app_mention", UserID: "U0ALICE", ChannelID: "C0TEAM", Text: ev.Text}
	if err := m.InjectMention(ev, twin); err != nil {
		t.Fatal(err)
	}
	if twin.TS == "" || twin.TS != ev.TS || twin.ID == ev.ID {
		t.Fatalf("message %s %s, twin %s %s", ev.ID, ev.TS, twin.ID, twin.TS)
	}
	if got := next(t, events); got.ID != ev.ID || got.Type != "message" {
		t.Errorf("first delivered %s %s, want the message", got.ID, got.Type)
	}
	if got := next(t, events); got.ID != twin.ID || got.Type != "app_mention" || got.TS != ev.TS {
		t.Errorf("second delivered %s %s %s, want the twin", got.ID, got.Type, got.TS)
	}
	msgs := m.Messages()
	if len(msgs) != 2 || msgs[0].TS != msgs[1].TS || msgs[1].Seq != 2 {
		t.Errorf("transcript %+v", msgs)
	}
}

// Without AgentView the platform refuses agent sessions as a workspace
// without the agent view does (the service then shows the status line);
// with it, the first update creates the session with its title and later
// titles are ignored.
func TestChatSessionStatus(t *testing.T) {
	ctx := t.Context()
	off := &Chat{}
	u := pipeline.SessionUpdate{ChannelID: "C1", ThreadTS: "1.0", Status: pipeline.SessionProcessing, Title: "hi"}
	if err := off.SetSessionStatus(ctx, u); !errors.Is(err, pipeline.ErrNoAgentSessions) {
		t.Fatalf("SetSessionStatus without AgentView = %v, want ErrNoAgentSessions", err)
	}
	if n := len(off.Messages()); n != 0 {
		t.Fatalf("a refused update left %d transcript entries", n)
	}
	on := &Chat{AgentView: true}
	if err := on.SetSessionStatus(ctx, u); err != nil {
		t.Fatal(err)
	}
	if c, th, ok := on.Busy(); !ok || c != "C1" || th != "1.0" {
		t.Fatalf("Busy = %q %q %v, want C1 1.0 true", c, th, ok)
	}
	u.Status, u.Title = pipeline.SessionActive, "again"
	if err := on.SetSessionStatus(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := on.Busy(); ok {
		t.Fatal("an active session is busy")
	}
	got := on.Messages()
	if len(got) != 2 || got[0].Title != "hi" || got[1].Title != "" || got[1].Text != "active" {
		t.Fatalf("transcript = %+v", got)
	}
}
