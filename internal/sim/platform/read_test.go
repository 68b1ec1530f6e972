package platform

import (
	"context"
	"slices"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The simulator's platform answers the reads from its transcript: people's
// messages and the bot's posts as last edited, threads oldest first,
// histories newest first; reactions are transcript entries.
func TestChatReadsItsTranscript(t *testing.T) {
	m := &Chat{}
	ctx := t.Context()
	root, _ := m.Send("U0MGR", "C0TEAM", "", "deploy failed")
	reply, _ := m.Send("U0ALICE", "C0TEAM", root, "on it", m.AddFile("log.txt", "text/plain", []byte("boom")))
	posted, err := m.Post(ctx, pipeline.Message{ChannelID: "C0TEAM", ThreadTS: root, Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Update(ctx, posted, pipeline.Message{ChannelID: "C0TEAM", Text: "looking"}); err != nil {
		t.Fatal(err)
	}
	_ = m.PostEphemeral(ctx, "C0TEAM", root, "U0ALICE", "only you")
	later, _ := m.Send("U0BOB", "C0TEAM", "", "lunch?")
	_, _ = m.Send("U0BOB", "C0RANDOM", "", "elsewhere")

	first, err := m.ThreadHistory(ctx, "C0TEAM", root, "", 2)
	if err != nil || len(first.Messages) != 2 || first.Next == "" {
		t.Fatalf("first page = %+v, %v", first, err)
	}
	rest, err := m.ThreadHistory(ctx, "C0TEAM", root, first.Next, 2)
	if err != nil || len(rest.Messages) != 1 || rest.Next != "" {
		t.Fatalf("second page = %+v, %v", rest, err)
	}
	all := append(first.Messages, rest.Messages...)
	if all[0].Text != "deploy failed" || all[1].Text != "on it" || all[1].Files[0].Name != "log.txt" ||
		all[2].Text != "looking" || all[2].BotID != DefaultBot.BotID || all[2].UserID != DefaultBot.UserID {
		t.Errorf("thread = %+v", all)
	}
	hist, err := m.ChannelHistory(ctx, "C0TEAM", "", "", 10)
	if err != nil || len(hist.Messages) != 2 || hist.Messages[0].TS != later || hist.Messages[1].Replies != 2 {
		t.Errorf("history = %+v, %v", hist, err)
	}
	if hist, _ := m.ChannelHistory(ctx, "C0TEAM", root, "", 10); len(hist.Messages) != 1 || hist.Messages[0].TS != later {
		t.Errorf("history after the root = %+v", hist)
	}
	if _, err := m.ThreadHistory(ctx, "C0TEAM", root, "x", 2); err == nil || err.Error() != "conversations.replies: invalid_cursor" {
		t.Errorf("bad cursor: %v", err)
	}
	members, _, err := m.ConversationMembers(ctx, "C0TEAM", "", 10)
	if want := []string{DefaultBot.UserID, "U0MGR", "U0ALICE", "U0BOB"}; err != nil || !slices.Equal(members, want) {
		t.Errorf("members = %q, %v; want %q", members, err, want)
	}
	if info, err := m.ConversationInfo(ctx, "C0TEAM"); err != nil || info.Name != "c0team" || info.Members != 4 || info.IsIM {
		t.Errorf("info = %+v, %v", info, err)
	}

	for range 2 {
		if err := m.React(ctx, "C0TEAM", reply, "eyes"); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Unreact(ctx, "C0TEAM", reply, "eyes"); err != nil {
		t.Fatal(err)
	}
	if err := m.Unreact(ctx, "C0TEAM", reply, "eyes"); err != nil {
		t.Fatal(err)
	}
	if err := m.React(ctx, "C0RANDOM", reply, "eyes"); err == nil || err.Error() != "reactions.add: message_not_found" {
		t.Errorf("a ts of another channel: %v", err)
	}
	var got []string
	for _, e := range m.Messages() {
		if e.Op == OpReaction {
			got = append(got, e.ThreadTS+" "+e.TS+" "+e.Text)
		}
	}
	if want := []string{root + " " + reply + " +eyes", root + " " + reply + " -eyes"}; !slices.Equal(got, want) {
		t.Errorf("reaction entries = %q, want %q", got, want)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.UserProfile(cancelled, "U0MGR"); err == nil {
		t.Error("a cancelled read succeeded")
	}
}
