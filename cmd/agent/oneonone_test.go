package main

import (
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

func TestOneOnOneLockDropReleaseRestart(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.answerAll()
	h.start()

	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.1", Text: "<@U0BOT> private matter"})
	h.expectReply("C0TEAM", "300.1", "private matter")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.2", ThreadTS: "300.1", Text: "/1on1"})
	h.expectNotice("C0TEAM", "300.1", "1on1 mode:")

	// Someone else's message in the thread is dropped (one_on_one) ...
	before := len(h.model.Requests())
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "300.3", ThreadTS: "300.1", Text: "me too"})
	h.waitMetric(drops("one_on_one"), 1)
	if len(h.model.Requests()) != before {
		t.Fatal("a message locked out by /1on1 reached the model")
	}
	// ... the holder and the manager are still answered.
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "300.4", ThreadTS: "300.1", Text: "manager here"})
	h.expectReply("C0TEAM", "300.1", "manager here")

	// The lock survives a restart.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "300.5", ThreadTS: "300.1", Text: "after restart"})
	h.waitMetric(drops("one_on_one"), 1)

	// Released by its holder: everyone again.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.6", ThreadTS: "300.1", Text: "/1on1 off"})
	h.expectNotice("C0TEAM", "300.1", "released")
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "300.7", ThreadTS: "300.1", Text: "hello again"})
	h.expectReply("C0TEAM", "300.1", "hello again")
}
