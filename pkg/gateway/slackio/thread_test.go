package slackio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// readAll pages through the thread with q.
func readAll(t *testing.T, chat *Chat, q pipeline.RepliesQuery) (msgs []pipeline.PostedMessage, pages int) {
	t.Helper()
	for {
		p, err := chat.ThreadReplies(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		msgs = append(msgs, p.Messages...)
		if p.Next == "" {
			return msgs, pages
		}
		q.Cursor = p.Next
	}
}

func texts(msgs []pipeline.PostedMessage) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func TestThreadRepliesReadsTheThread(t *testing.T) {
	chat, s := newTestChat(t)
	const root = "1600000000.000100"
	// People's messages reach the fake as the events it delivers, or
	// were said before the bot listened.
	s.AddMessage(fake.Message{User: "U0ALICE", Channel: "C1", TS: root, Text: "the build is red"})
	for i := 2; i <= 6; i++ {
		s.AddMessage(fake.Message{User: "U0BOB", Channel: "C1", TS: fmt.Sprintf("1600000000.%06d", i*100), ThreadTS: root,
			Text: fmt.Sprintf("reply %d", i)})
	}
	s.SendEvent(fake.Message{BotID: "B0CI", Subtype: "bot_message", Channel: "C1", TS: "1600000000.000700", ThreadTS: root,
		Text: "CI: failed", Files: []fake.File{{ID: "F1", Name: "log.txt", MimeType: "text/plain", Size: 12}}}.Payload())
	s.SendEvent(fake.Message{User: "U0BOB", Channel: "C1", TS: "1600000000.000800", Text: "another thread"}.Payload())
	if _, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C1", ThreadTS: root, Text: "on it"}); err != nil {
		t.Fatal(err)
	}

	msgs, pages := readAll(t, chat, pipeline.RepliesQuery{ChannelID: "C1", RootTS: root, Limit: 3})
	want := []string{"the build is red", "reply 2", "reply 3", "reply 4", "reply 5", "reply 6", "CI: failed", "on it"}
	if got := texts(msgs); !slices.Equal(got, want) {
		t.Fatalf("thread = %q, want %q", got, want)
	}
	if pages != 3 {
		t.Errorf("pages = %d, want 3 of 3", pages)
	}
	ci, own := msgs[6], msgs[7]
	if ci.BotID != "B0CI" || ci.Subtype != "bot_message" || len(ci.Files) != 1 || ci.Files[0].Name != "log.txt" {
		t.Errorf("the other bot's message = %+v", ci)
	}
	if own.UserID != fake.DefaultBotUserID || own.BotID != fake.DefaultBotID {
		t.Errorf("the bot's own post = %+v", own)
	}

	// Bounded: the root comes first whatever the bounds, then the replies
	// between them, both included.
	msgs, _ = readAll(t, chat, pipeline.RepliesQuery{ChannelID: "C1", RootTS: root,
		Oldest: "1600000000.000300", Latest: "1600000000.000500", Limit: 2})
	if got, want := texts(msgs), []string{"the build is red", "reply 3", "reply 4", "reply 5"}; !slices.Equal(got, want) {
		t.Errorf("bounded thread = %q, want %q", got, want)
	}
}

func TestThreadRepliesErrors(t *testing.T) {
	chat, s := newTestChat(t)
	if _, err := chat.ThreadReplies(t.Context(), pipeline.RepliesQuery{ChannelID: "C1"}); err == nil {
		t.Error("a read without a thread succeeded")
	}
	s.Fail("conversations.replies", "missing_scope")
	_, err := chat.ThreadReplies(context.Background(), pipeline.RepliesQuery{ChannelID: "C1", RootTS: "1.0"})
	var se slack.SlackErrorResponse
	if err == nil || !strings.HasPrefix(err.Error(), "conversations.replies: missing_scope") || !errors.As(err, &se) {
		t.Errorf("err = %v, want the method and the platform's code", err)
	}
	if strings.Contains(fmt.Sprint(err), fake.DefaultBotToken) {
		t.Error("the token is in the error")
	}
}
