package main

import (
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

const (
	toolRemember = "mcp__agent_memory__remember"
	toolRecall   = "mcp__agent_memory__recall"
	toolForget   = "mcp__agent_memory__forget"
)

// rememberInDM has the manager ask, in a DM thread, to remember that we
// deploy on Tuesdays; the scripted model calls remember and replies with
// its result. The steps after it are the test's.
func (h *harness) rememberInDM(then ...func(string, bool) fake.AnthropicResponse) {
	h.script(append([]func(string, bool) fake.AnthropicResponse{
		use("m1", toolRemember, map[string]string{"text": "we deploy on Tuesdays"}),
		say("r1"),
		end,
	}, then...)...)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "remember we deploy on Tuesdays"})
	h.expectReply("D0MGR", "100.1", "remembered as m")
}

// A fact the manager asked to remember in one DM thread reaches a new DM
// thread: in its first turn's input, and through recall.
func TestMemoryAcrossDMThreads(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.rememberInDM(
		use("m2", toolRecall, map[string]string{"query": "when do we deploy?"}),
		say("r2"),
		end,
	)
	before := len(h.model.Requests())
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "200.1", Text: "when do we deploy?"})
	p := h.expectReply("D0MGR", "200.1", "found")
	if !strings.Contains(p.Text, "we deploy on Tuesdays") {
		t.Errorf("recall in a new DM thread = %q, want the memory", p.Text)
	}
	first := h.model.Requests()[before]
	if !strings.Contains(string(first.Messages), "we deploy on Tuesdays") {
		t.Errorf("the new thread's first input does not carry the memory: %s", first.Messages)
	}
}

// /memory lists this conversation's memories with their ids; /forget
// removes one, from the list and from recall.
func TestMemoryCommands(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.rememberInDM()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "300.1", Text: "/memory"})
	list := h.expectAnswer("D0MGR", "300.1", "Memories")
	id := memoryIDRE.FindString(list.Text)
	if id == "" || !strings.Contains(list.Text, "we deploy on Tuesdays") {
		t.Fatalf("/memory = %q", list.Text)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "301.1", Text: "/forget " + id})
	h.expectAnswer("D0MGR", "301.1", "forgot memory "+id)
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "302.1", Text: "/memory"})
	h.expectAnswer("D0MGR", "302.1", "No memories here.")
}

// expectAnswer waits for a command's answer (no agent turn).
func (h *harness) expectAnswer(channel, thread, text string) fake.Post {
	h.t.Helper()
	p, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return p.Channel == channel && p.ThreadTS == thread && strings.Contains(p.Text, text)
	})
	if err != nil {
		h.t.Fatalf("no answer %q in %s/%s: %v\nposts: %+v", text, channel, thread, err, h.slack.Posts())
	}
	return p
}

// /remember: a member's memory of their conversation; --persona only for
// the manager and the backup manager, as their own decision (no card);
// refused to a member and to an approver of anything.
func TestMemoryRememberCommand(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "700.1", Text: "<@U0BOT> /remember standup is at ten"})
	h.expectAnswer("C0PUB", "700.1", "(recalled in this conversation)")
	for i, who := range []string{"U0ALICE", "U0APP"} {
		ts := "70" + string(rune('1'+i)) + ".1"
		h.send(fake.Message{User: who, Channel: "C0PUB", TS: ts, Text: "<@U0BOT> /remember --persona interns own releases"})
		h.expectAnswer("C0PUB", ts, "only the manager can make a persona-wide memory")
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "/remember --persona Morgan owns releases"})
	h.expectAnswer("D0MGR", "100.1", "(recalled everywhere)")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "710.1", Text: "<@U0BOT> /memory"})
	list := h.expectAnswer("C0PUB", "710.1", "Memories")
	if !strings.Contains(list.Text, "standup is at ten") || !strings.Contains(list.Text, "[persona]") ||
		!strings.Contains(list.Text, "Morgan owns releases") || strings.Contains(list.Text, "interns") {
		t.Errorf("/memory in the channel = %q", list.Text)
	}
}
