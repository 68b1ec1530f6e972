package slackio

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// count is how many times method was called on s.
func count(s *fake.Slack, method string) int {
	n := 0
	for _, c := range s.Calls() {
		if c == method {
			n++
		}
	}
	return n
}

// A thread and a channel read back page by page through the platform's
// cursors: people's messages (delivered or earlier), their files, another
// bot's post and the bot's own.
func TestReadsThreadsAndChannelsInPages(t *testing.T) {
	chat, s := newTestChat(t)
	ctx := t.Context()
	report := s.AddFile("report.pdf", []byte("%PDF-1.4"))
	s.AddHistory(
		fake.Message{User: "U0MGR", Channel: "C1", TS: "100.000001", Text: "deploy failed"},
		fake.Message{User: "U0ALICE", Channel: "C1", TS: "100.000002", ThreadTS: "100.000001", Text: "logs attached", Files: []fake.File{report}},
		fake.Message{Channel: "C1", TS: "100.000003", ThreadTS: "100.000001", BotID: "B0CI", Subtype: "bot_message", Text: "build red"},
		fake.Message{User: "U0BOB", Channel: "C1", TS: "100.000009", Text: "lunch?"},
	)
	s.SendEvent(fake.Message{User: "U0ALICE", Channel: "C1", TS: "100.000004", ThreadTS: "100.000001", Text: "<@U0BOT> what broke?"}.Payload())
	if _, err := chat.Post(ctx, pipeline.Message{ChannelID: "C1", ThreadTS: "100.000001", Text: "looking"}); err != nil {
		t.Fatal(err)
	}
	var got []pipeline.PostedMessage
	cursor := ""
	for range 5 {
		page, err := chat.ThreadHistory(ctx, "C1", "100.000001", cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Messages...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text)
	}
	if want := []string{"deploy failed", "logs attached", "build red", "<@U0BOT> what broke?", "looking"}; !slices.Equal(texts, want) {
		t.Fatalf("thread = %q, want %q", texts, want)
	}
	if f := got[1].Files; len(f) != 1 || f[0].Name != "report.pdf" || f[0].MimeType != "application/pdf" || f[0].URL != "" {
		t.Errorf("files = %+v", f)
	}
	if got[2].BotID != "B0CI" || got[2].Subtype != "bot_message" || got[4].BotID != fake.DefaultBotID || got[0].UserID != "U0MGR" {
		t.Errorf("authors = %+v", got)
	}

	page, err := chat.ChannelHistory(ctx, "C1", "", "", 1)
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Text != "lunch?" || page.Next == "" {
		t.Fatalf("newest page = %+v, %v", page, err)
	}
	page, err = chat.ChannelHistory(ctx, "C1", "", page.Next, 10)
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Text != "deploy failed" || page.Messages[0].Replies != 4 || page.Next != "" {
		t.Fatalf("older page = %+v, %v", page, err)
	}
	page, err = chat.ChannelHistory(ctx, "C1", "100.000001", "", 10)
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Text != "lunch?" {
		t.Fatalf("after oldest = %+v, %v", page, err)
	}
}

// A profile carries only its public fields; a conversation is described
// and its members paged; reactions are added and removed, twice-over
// being no error.
func TestReadsPeopleConversationsAndReactions(t *testing.T) {
	chat, s := newTestChat(t)
	ctx := t.Context()
	s.AddPerson(fake.Person{ID: "U0ALICE", Name: "alice", RealName: "Alice Doe", Title: "SRE", Email: "alice@example.com",
		Phone: "+1 555 0100", TZ: "Europe/Paris", TZLabel: "Central European Summer Time"})
	s.AddConversation(fake.Conversation{ID: "C1", Name: "ops", Topic: "incidents", Purpose: "the ops team", Creator: "U0MGR",
		Members: []string{"U0MGR", "U0ALICE", "U0BOB", fake.DefaultBotUserID}})
	p, err := chat.UserProfile(ctx, "U0ALICE")
	want := pipeline.Profile{UserID: "U0ALICE", Name: "alice", RealName: "Alice Doe", Title: "SRE", TimeZone: "Europe/Paris",
		TZLabel: "Central European Summer Time"}
	if err != nil || p != want {
		t.Errorf("profile = %+v, %v; want %+v", p, err, want)
	}
	if _, err := chat.UserProfile(ctx, "nobody"); err == nil || err.Error() != "users.info: user_not_found" {
		t.Errorf("unknown user: %v", err)
	}
	info, err := chat.ConversationInfo(ctx, "C1")
	if err != nil || info.Name != "ops" || info.Topic != "incidents" || info.Purpose != "the ops team" || info.Members != 4 ||
		info.IsPrivate || info.IsIM || info.Creator != "U0MGR" || info.Created.IsZero() {
		t.Errorf("info = %+v, %v", info, err)
	}
	s.SendEvent(fake.Message{User: "U0MGR", Channel: "D1", TS: "5.1", Text: "hi"}.Payload())
	if dm, err := chat.ConversationInfo(ctx, "D1"); err != nil || !dm.IsIM || dm.User != "U0MGR" {
		t.Errorf("DM info = %+v, %v", dm, err)
	}
	var members []string
	cursor := ""
	for range 5 {
		page, next, err := chat.ConversationMembers(ctx, "C1", cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	if want := []string{"U0MGR", "U0ALICE", "U0BOB", fake.DefaultBotUserID}; !slices.Equal(members, want) {
		t.Errorf("members = %q, want %q", members, want)
	}

	s.AddHistory(fake.Message{User: "U0MGR", Channel: "C1", TS: "7.1", Text: "ship it"})
	for range 2 {
		if err := chat.React(ctx, "C1", "7.1", "eyes"); err != nil {
			t.Fatalf("react: %v", err)
		}
	}
	if got := s.Reactions("C1", "7.1"); !slices.Equal(got, []string{"eyes"}) {
		t.Errorf("reactions = %q", got)
	}
	for range 2 {
		if err := chat.Unreact(ctx, "C1", "7.1", "eyes"); err != nil {
			t.Fatalf("unreact: %v", err)
		}
	}
	if got := s.Reactions("C1", "7.1"); len(got) != 0 {
		t.Errorf("reactions after unreact = %q", got)
	}
	if err := chat.React(ctx, "C1", "9.9", "eyes"); err == nil || err.Error() != "reactions.add: message_not_found" {
		t.Errorf("react on no message: %v", err)
	}
	s.Fail("reactions.add", "missing_scope")
	if err := chat.React(ctx, "C1", "7.1", "eyes"); err == nil ||
		err.Error() != "reactions.add: missing_scope: the app needs the scope reactions:write (agent doctor lists what the app lacks)" {
		t.Errorf("missing scope: %v", err)
	}
}

// A read the platform rate limits waits the Retry-After it names, on the
// chat's clock, and then reads; the client itself does not wait.
func TestReadWaitsOutRetryAfter(t *testing.T) {
	chat, s := newTestChat(t)
	clk := fake.NewClock(time.Time{})
	chat.clock = clk
	s.AddHistory(fake.Message{User: "U0MGR", Channel: "C1", TS: "7.1", Text: "ship it"})
	s.Fail("conversations.history", "ratelimited:3")
	type result struct {
		page pipeline.MessagePage
		err  error
	}
	done := make(chan result, 1)
	go func() {
		page, err := chat.ChannelHistory(t.Context(), "C1", "", "", 10)
		done <- result{page, err}
	}()
	if !fake.Eventually(10*time.Second, func() bool { return clk.Timers() == 1 }) {
		t.Fatal("the read armed no wait")
	}
	clk.Advance(3*time.Second - time.Millisecond)
	if clk.Timers() != 1 || count(s, "conversations.history") != 1 {
		t.Fatalf("the read was tried again before Retry-After: %d timers, %d calls", clk.Timers(), count(s, "conversations.history"))
	}
	clk.Advance(time.Millisecond)
	r := <-done
	if r.err != nil || len(r.page.Messages) != 1 {
		t.Fatalf("after the wait: %+v, %v", r.page, r.err)
	}
	if n := count(s, "conversations.history"); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

// A Retry-After longer than a turn should hold, or one that keeps coming,
// is handed back to the caller with the wait it names.
func TestReadGivesUpOnLongOrRepeatedRateLimits(t *testing.T) {
	chat, s := newTestChat(t)
	clk := fake.NewClock(time.Time{})
	chat.clock = clk
	s.Fail("users.info", "ratelimited:60")
	_, err := chat.UserProfile(t.Context(), "U0ALICE")
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Minute || rl.Method != "users.info" ||
		err.Error() != "users.info: rate limited by the chat platform; try again in 1m0s" {
		t.Fatalf("err = %v", err)
	}
	if n := count(s, "users.info"); n != 1 || clk.Timers() != 0 {
		t.Errorf("%d calls and %d waits for a 60 s Retry-After, want 1 and 0", n, clk.Timers())
	}

	s.Fail("conversations.members", "ratelimited:1", "ratelimited:1", "ratelimited:1")
	done := make(chan error, 1)
	go func() {
		_, _, err := chat.ConversationMembers(t.Context(), "C1", "", 10)
		done <- err
	}()
	for want := 1; want <= 2; want++ {
		if !fake.Eventually(10*time.Second, func() bool { return clk.Timers() == 1 }) {
			t.Fatalf("wait %d not armed", want)
		}
		clk.Advance(time.Second)
	}
	if err := <-done; !errors.As(err, &rl) || rl.RetryAfter != time.Second {
		t.Fatalf("err = %v", err)
	}
	if n := count(s, "conversations.members"); n != readTries {
		t.Errorf("%d calls, want %d", n, readTries)
	}
}

// A cancelled read stops waiting.
func TestReadWaitEndsWithItsContext(t *testing.T) {
	chat, s := newTestChat(t)
	clk := fake.NewClock(time.Time{})
	chat.clock = clk
	s.Fail("conversations.info", "ratelimited:5")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := chat.ConversationInfo(ctx, "C1")
		done <- err
	}()
	if !fake.Eventually(10*time.Second, func() bool { return clk.Timers() == 1 }) {
		t.Fatal("no wait armed")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "conversations.info: ") {
		t.Errorf("err = %v", err)
	}
	if clk.Timers() != 0 {
		t.Error("the wait's timer was left armed")
	}
}
