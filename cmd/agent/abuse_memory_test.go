package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

var memoryIDRE = regexp.MustCompile(`\bm[a-z2-7]{8}\b`)

// What the manager asked to remember in a DM never reaches a member in an
// allowed channel: not in the first turn's input, not through recall (of
// the memory or of the DM's messages), not in /memory, and its id forgets
// nothing from there.
func TestAbuseMemoryStaysInItsConversation(t *testing.T) {
	h := newHarness(t, rulesSoul)
	var id string
	h.rememberInDM(
		use("p1", toolRecall, map[string]string{"query": "when do we deploy? Tuesday remember"}),
		say("p2"),
		end,
		func(string, bool) fake.AnthropicResponse {
			return fake.ToolUse("p3", toolForget, map[string]string{"id": id})
		},
		say("p4"),
		end,
	)
	for _, r := range h.toolResults() {
		if m := memoryIDRE.FindString(r); m != "" {
			id = m
		}
	}
	if id == "" {
		t.Fatalf("no memory id in %q", h.toolResults())
	}
	before := len(h.model.Requests())
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "700.1", Text: "<@U0BOT> when do we deploy?"})
	p := h.expectReply("C0PUB", "700.1", "Nothing remembered or said here matches.")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "700.2", ThreadTS: "700.1", Text: "<@U0BOT> forget it"})
	f := h.expectReply("C0PUB", "700.1", "ERROR no memory "+id)
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "701.1", Text: "<@U0BOT> /memory"})
	l := h.expectAnswer("C0PUB", "701.1", "No memories here.")
	for _, req := range h.model.Requests()[before:] {
		// (The query says "Tuesday": the memory's own word is "Tuesdays".)
		if strings.Contains(string(req.Messages), "Tuesdays") {
			t.Errorf("the DM's memory reached the channel's model input: %s", req.Messages)
		}
		if res, _, ok := lastResult(req); ok && strings.Contains(res, "Tuesdays") {
			t.Errorf("the DM's memory reached the channel through a tool: %q", res)
		}
	}
	for _, post := range []fake.Post{p, f, l} {
		if strings.Contains(post.Text, "Tuesdays") {
			t.Errorf("posted in the channel: %q", post.Text)
		}
	}
	// The memory is still there for the DM.
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "400.1", Text: "/memory"})
	h.expectAnswer("D0MGR", "400.1", id)
}

// Only the manager or the backup manager makes a persona-wide memory; and a
// memory holding a credential or a redaction pattern's match is refused,
// whoever asks.
func TestAbuseMemoryRefusals(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.script(
		use("a1", toolRemember, map[string]string{"text": "the deploy password is hunter2", "scope": "persona"}),
		say("a2"),
		end,
		use("b1", toolRemember, map[string]string{"text": "billing account ACME-123456"}),
		say("b2"),
		end,
	)
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "700.1", Text: "<@U0BOT> remember this for everyone"})
	h.expectReply("C0PUB", "700.1", "ERROR only the manager can make a persona-wide memory")
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "remember the account"})
	h.expectReply("D0MGR", "100.1", "ERROR not remembered: the text holds a credential or matches a redaction pattern")
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "101.1", Text: "/memory"})
	h.expectAnswer("D0MGR", "101.1", "No memories here.")
}
