package main

import (
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// /ignore mutes a person everywhere and /ignore-thread a thread, each with
// drop reason ignored before any model call; the mutes survive a restart;
// /unignore-thread, typed in the muted thread, still lifts it.
func TestMuteDropsBeforeTheModel(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.answerAll()
	h.start()

	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> /ignore <@U0ALICE> 2h"})
	h.expectNotice("C0TEAM", "100.1", "ignoring <@U0ALICE> for 2h")
	before := len(h.model.Requests())
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "200.1", Text: "<@U0BOT> hello?"})
	h.waitMetric(drops("ignored"), 1)
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "200.2", Text: "<@U0BOT> over here then"})
	h.waitMetric(drops("ignored"), 2)
	if len(h.model.Requests()) != before {
		t.Fatal("a muted person's message reached the model")
	}

	// A thread: everyone in it is muted but the managers (pinned).
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "300.1", Text: "<@U0BOT> a noisy thread"})
	h.expectReply("C0TEAM", "300.1", "a noisy thread")
	h.send(fake.Message{User: "U0APP", Channel: "C0TEAM", TS: "300.2", ThreadTS: "300.1", Text: "/ignore-thread 1d"})
	h.expectNotice("C0TEAM", "300.1", "ignoring this thread for 1d")
	before = len(h.model.Requests())
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "300.3", ThreadTS: "300.1", Text: "more noise"})
	h.waitMetric(drops("ignored"), 3)
	if len(h.model.Requests()) != before {
		t.Fatal("a muted thread's message reached the model")
	}
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "300.4", ThreadTS: "300.1", Text: "<@U0BOT> and me?"})
	h.expectReply("C0TEAM", "300.1", "and me?")

	// Both survive a restart (a new process counts from 0).
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "400.1", Text: "<@U0BOT> after the restart"})
	h.waitMetric(drops("ignored"), 1)
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "400.2", ThreadTS: "300.1", Text: "still noisy"})
	h.waitMetric(drops("ignored"), 2)

	// Lifted from inside the muted thread.
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "400.3", ThreadTS: "300.1", Text: "/unignore-thread"})
	h.expectNotice("C0TEAM", "300.1", "stopped ignoring this thread")
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "400.4", ThreadTS: "300.1", Text: "quiet now"})
	h.expectReply("C0TEAM", "300.1", "quiet now")
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "400.5", Text: "<@U0BOT> /unignore <@U0ALICE>"})
	h.expectNotice("C0TEAM", "400.5", "stopped ignoring <@U0ALICE>")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "400.6", Text: "<@U0BOT> back"})
	h.expectReply("C0TEAM", "400.6", "back")
	if got := h.metric(drops("ignored")); got != 2 {
		t.Errorf("ignored drops = %v after the mutes were lifted, want 2", got)
	}
}

// /model sets the model of the thread's requests, from AGENT_MODELS only.
func TestModelPerThread(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_MODELS"] = "claude-big, claude-test"
	h.answerAll()
	h.start()

	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> /model claude-huge"})
	if p := h.expectNotice("C0TEAM", "100.1", "not offered"); p.Text != "That model is not offered here; choose one of `claude-test`, `claude-big`." {
		t.Errorf("refusal %q", p.Text)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.2", ThreadTS: "100.1", Text: "/model claude-big"})
	h.expectNotice("C0TEAM", "100.1", "Model of this thread: `claude-big`")
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.3", ThreadTS: "100.1", Text: "<@U0BOT> think hard"})
	h.expectReply("C0TEAM", "100.1", "think hard")
	reqs := h.model.Requests()
	if m := reqs[len(reqs)-1].Model; m != "claude-big" {
		t.Errorf("the thread's request used %q, want claude-big", m)
	}
	// Another thread keeps the service's model.
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "200.1", Text: "<@U0BOT> elsewhere"})
	h.expectReply("C0TEAM", "200.1", "elsewhere")
	reqs = h.model.Requests()
	if m := reqs[len(reqs)-1].Model; m != "claude-test" {
		t.Errorf("another thread's request used %q, want claude-test", m)
	}
	// The thread's choice survives a restart.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.4", ThreadTS: "100.1", Text: "<@U0BOT> again"})
	h.expectReply("C0TEAM", "100.1", "again")
	reqs = h.model.Requests()
	if m := reqs[len(reqs)-1].Model; m != "claude-big" {
		t.Errorf("after a restart the thread's request used %q, want claude-big", m)
	}
}
