package main

import (
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// A member can neither mute others (a person or a thread) nor choose a
// thread's model; a muted person cannot lift their own mute, nor make the
// persona answer by trying.
func TestAbuseMemberCannotIgnore(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.answerAll()
	h.start()

	for i, text := range []string{"/ignore <@U0BOB>", "/ignore-thread 1h", "/unignore <@U0BOB>"} {
		ts := []string{"100.1", "100.2", "100.3"}[i]
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: ts, Text: "<@U0BOT> " + text})
		if p := h.expectNotice("C0TEAM", ts, "only manager"); p.Text != "only manager or approver can ignore" {
			t.Errorf("%s: %q, want the refusal", text, p.Text)
		}
	}
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "100.4", Text: "<@U0BOT> /model claude-test"})
	h.expectNotice("C0TEAM", "100.4", modelRefused)
	// Nobody was muted.
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "100.5", Text: "<@U0BOT> am I heard?"})
	h.expectReply("C0TEAM", "100.5", "am I heard?")

	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "200.1", Text: "<@U0BOT> /ignore <@U0ALICE>"})
	h.expectNotice("C0TEAM", "200.1", "ignoring <@U0ALICE>")
	posts := len(h.slack.Posts())
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "200.2", Text: "<@U0BOT> /unignore <@U0ALICE>"})
	h.waitMetric(drops("ignored"), 1)
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "200.3", Text: "<@U0BOT> /unignore-thread"})
	h.waitMetric(drops("ignored"), 2)
	if got := h.slack.Posts()[posts:]; len(got) != 0 {
		t.Errorf("the persona answered a muted person: %+v", got)
	}
}

// Mutes never apply to the manager or the backup (pinned): an approver's
// /ignore-thread, typed in a thread or as the channel-wide slash command,
// silences everyone else there, never them.
func TestAbuseMuteNeverSilencesTheManager(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.answerAll()
	h.start()

	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.1", Text: "<@U0BOT> hello"})
	h.expectReply("C0TEAM", "300.1", "hello")
	h.send(fake.Message{User: "U0APP", Channel: "C0TEAM", TS: "300.2", ThreadTS: "300.1", Text: "<@U0BOT> /ignore-thread"})
	h.expectNotice("C0TEAM", "300.1", "ignoring this thread")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.3", ThreadTS: "300.1", Text: "<@U0BOT> anyone?"})
	h.waitMetric(drops("ignored"), 1)
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "300.4", ThreadTS: "300.1", Text: "<@U0BOT> manager here"})
	h.expectReply("C0TEAM", "300.1", "manager here")
	h.send(fake.Message{User: "U0BACKUP", Channel: "C0TEAM", TS: "300.5", ThreadTS: "300.1", Text: "<@U0BOT> backup here"})
	h.expectReply("C0TEAM", "300.1", "backup here")

	h.slash("U0APP", "C0TEAM", "/ignore-thread", "")
	h.expectNotice("C0TEAM", "", "ignoring this channel")
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "310.1", Text: "<@U0BOT> hello?"})
	h.waitMetric(drops("ignored"), 2)
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "310.2", Text: "<@U0BOT> the channel is muted?"})
	h.expectReply("C0TEAM", "310.2", "the channel is muted?")
	h.slash("U0BACKUP", "C0TEAM", "/model", "")
	h.expectNotice("C0TEAM", "", "model is `claude-test`")
	if got := h.metric(drops("ignored")); got != 2 {
		t.Fatalf("ignored drops = %v, want 2 (the member's alone)", got)
	}
}
