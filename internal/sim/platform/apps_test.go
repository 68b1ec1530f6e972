package platform

import (
	"context"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// runApp runs a until the test ends and returns the delivered events.
func runApp(t *testing.T, a *App) <-chan *pipeline.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan *pipeline.Event, 100)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(ev *pipeline.Event) { events <- ev }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(chatTimeout):
			t.Error("the app's Run did not return after cancel")
		}
	})
	return events
}

func none(t *testing.T, events <-chan *pipeline.Event) {
	t.Helper()
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(20 * time.Millisecond):
	}
}

var onc = pipeline.Identity{UserID: "U0ONC", BotID: "B0ONC", TeamID: "T0SIM"}

// Two apps of one workspace: each receives the other's channel posts as
// the platform delivers another app's post; a person's channel message
// reaches both, its app_mention twin only the app called; a DM and a
// post's edit reach nobody else.
func TestAppsShareTheWorkspace(t *testing.T) {
	ctx := context.Background()
	m := &Chat{Bot: pipeline.Identity{UserID: "U0BOT", BotID: "B0BOT", TeamID: "T0SIM"}}
	a := m.AddApp(onc)
	bots, oncs := func() (<-chan *pipeline.Event, <-chan *pipeline.Event) {
		ev, _, _ := runChat(t, m)
		return ev, runApp(t, a)
	}()

	root, err := m.Send("U0MGR", "C0TEAM", "", "<@U0BOT> hand it to on-call")
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, bots); ev.TS != root || ev.UserID != "U0MGR" {
		t.Fatalf("the bot got %+v", ev)
	}
	if ev := next(t, oncs); ev.TS != root || ev.UserID != "U0MGR" || ev.Type != "message" || ev.ID == "" {
		t.Fatalf("on-call got %+v", ev)
	}

	ts, err := m.Post(ctx, pipeline.Message{ChannelID: "C0TEAM", ThreadTS: root, Text: "<@U0ONC> can you check?"})
	if err != nil {
		t.Fatal(err)
	}
	ev := next(t, oncs)
	if ev.Type != "message" || ev.UserID != "U0BOT" || ev.BotID != "B0BOT" || ev.Subtype != "" || ev.TS != ts ||
		ev.ThreadTS != root || ev.ParentUserID != "U0MGR" || ev.Text != "<@U0ONC> can you check?" || ev.ChannelType != "channel" {
		t.Fatalf("on-call got the bot's post as %+v", ev)
	}
	none(t, bots) // its own post is not delivered to itself

	if err := m.Update(ctx, ts, pipeline.Message{ChannelID: "C0TEAM", Text: "edited"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, ts, pipeline.Message{ChannelID: "C0TEAM", Text: "not mine"}); err == nil {
		t.Fatal("on-call edited the bot's post")
	}
	back, err := a.Post(ctx, pipeline.Message{ChannelID: "C0TEAM", ThreadTS: root, Text: "<@U0BOT> checked"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, bots); ev.UserID != "U0ONC" || ev.BotID != "B0ONC" || ev.TS != back {
		t.Fatalf("the bot got on-call's post as %+v", ev)
	}
	if _, err := m.Post(ctx, pipeline.Message{ChannelID: "D0SIM", Text: "private"}); err != nil {
		t.Fatal(err)
	}
	none(t, oncs)

	// A person calls on-call: the message reaches both, the twin on-call only.
	msg := &pipeline.Event{Type: "message", UserID: "U0MGR", ChannelID: "C0TEAM", ThreadTS: root, Text: "<@U0ONC> thanks"}
	twin := &pipeline.Event{Type: "app_mention", UserID: "U0MGR", ChannelID: "C0TEAM", ThreadTS: root, Text: msg.Text}
	if err := a.InjectMention(msg, twin); err != nil {
		t.Fatal(err)
	}
	if e1, e2 := next(t, oncs), next(t, oncs); e1.Type != "message" || e2.Type != "app_mention" || e2.TS != msg.TS {
		t.Fatalf("on-call got %+v then %+v", e1, e2)
	}
	if ev := next(t, bots); ev.Type != "message" || ev.TS != msg.TS {
		t.Fatalf("the bot got %+v", ev)
	}
	none(t, bots)

	// The transcript: whose bot wrote what; each app reads the other's post
	// as a bot's, and sees itself as a bot.
	var authors []string
	for _, e := range m.Messages() {
		if e.Op == OpPost {
			authors = append(authors, e.UserID)
		}
	}
	if len(authors) != 3 || authors[0] != "U0BOT" || authors[1] != "U0ONC" || authors[2] != "U0BOT" {
		t.Fatalf("post authors = %v", authors)
	}
	page, err := a.ThreadReplies(ctx, pipeline.RepliesQuery{ChannelID: "C0TEAM", RootTS: root})
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, p := range page.Messages {
		read = append(read, p.UserID+"/"+p.BotID)
	}
	if got := len(read); got != 4 || read[1] != "U0BOT/B0BOT" || read[2] != "U0ONC/B0ONC" {
		t.Fatalf("the thread reads %v", read)
	}
	if p, err := m.UserProfile(ctx, "U0ONC"); err != nil || !p.IsBot {
		t.Fatalf("on-call's profile = %+v, %v", p, err)
	}
	if id, _ := a.AuthTest(ctx); id != onc {
		t.Fatalf("on-call's AuthTest = %+v", id)
	}
}

// With Relay set, what the platform delivers of its own accord is handed
// over, not queued, until Deliver queues it.
func TestAppsRelayHandsOver(t *testing.T) {
	ctx := context.Background()
	m := &Chat{}
	type handed struct {
		to pipeline.Identity
		ev *pipeline.Event
	}
	var got []handed
	m.Relay = func(to pipeline.Identity, ev *pipeline.Event) {
		ev.ID = "EvRELAY"
		got = append(got, handed{to, ev})
	}
	a := m.AddApp(onc)
	oncs := runApp(t, a)
	if _, err := m.Post(ctx, pipeline.Message{ChannelID: "C0TEAM", Text: "<@U0ONC> over to you"}); err != nil {
		t.Fatal(err)
	}
	none(t, oncs)
	m.mu.Lock()
	n := len(got)
	m.mu.Unlock()
	if n != 1 || got[0].to != onc || got[0].ev.UserID != DefaultBot.UserID {
		t.Fatalf("handed %+v", got)
	}
	if err := m.Deliver(got[0].to, got[0].ev); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, oncs); ev.ID != "EvRELAY" {
		t.Fatalf("delivered %+v", ev)
	}
	if err := m.Deliver(pipeline.Identity{UserID: "U0NOBODY"}, got[0].ev); err == nil {
		t.Fatal("delivered to a bot the workspace does not have")
	}
}
