package platform

import (
	"slices"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestThreadRepliesFromTheTranscript(t *testing.T) {
	m := &Chat{}
	ctx := t.Context()
	root, err := m.Send("U0ALICE", "C0TEAM", "", "the build is red")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Send("U0BOB", "C0TEAM", root, "since when?"); err != nil {
		t.Fatal(err)
	}
	if err := m.Inject(&pipeline.Event{UserID: "U0CI", BotID: "B0CI", ChannelID: "C0TEAM", ThreadTS: root, Text: "CI: failed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Send("U0BOB", "C0TEAM", "", "another thread"); err != nil {
		t.Fatal(err)
	}
	mention := &pipeline.Event{UserID: "U0ALICE", ChannelID: "C0TEAM", ThreadTS: root, Text: "<@U0SIMBOT> look"}
	if err := m.InjectMention(mention, &pipeline.Event{Type: "app_mention", UserID: "U0ALICE", ChannelID: "C0TEAM",
		ThreadTS: root, Text: mention.Text}); err != nil {
		t.Fatal(err)
	}
	post, err := m.Post(ctx, pipeline.Message{ChannelID: "C0TEAM", ThreadTS: root, Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Update(ctx, post, pipeline.Message{ChannelID: "C0TEAM", Text: "final"}); err != nil {
		t.Fatal(err)
	}

	var got []string
	q := pipeline.RepliesQuery{ChannelID: "C0TEAM", RootTS: root, Limit: 2}
	pages := 0
	for {
		p, err := m.ThreadReplies(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, msg := range p.Messages {
			got = append(got, msg.UserID+"/"+msg.BotID+"/"+msg.Subtype+": "+msg.Text)
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	want := []string{
		"U0ALICE//: the build is red",
		"U0BOB//: since when?",
		"U0CI/B0CI/bot_message: CI: failed",
		"U0ALICE//: <@U0SIMBOT> look", // once, not again as its app_mention
		"U0SIMBOT/B0SIMBOT/: final",   // as it now reads
	}
	if !slices.Equal(got, want) {
		t.Errorf("thread =\n%q\nwant\n%q", got, want)
	}
	if pages != 3 {
		t.Errorf("pages = %d, want 3", pages)
	}

	// Bounded: the root first whatever the bounds.
	p, err := m.ThreadReplies(ctx, pipeline.RepliesQuery{ChannelID: "C0TEAM", RootTS: root, Oldest: mention.TS, Latest: mention.TS})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 2 || p.Messages[0].TS != root || p.Messages[1].TS != mention.TS {
		t.Errorf("bounded read = %+v, want the root and the mention", p.Messages)
	}
	if _, err := m.ThreadReplies(ctx, pipeline.RepliesQuery{ChannelID: "C0TEAM", RootTS: root, Cursor: "x"}); err == nil {
		t.Error("a bad cursor was taken")
	}
}
