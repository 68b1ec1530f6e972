package main

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/fake"
)

func TestCompactCommand(t *testing.T) {
	h := newHarness(t, testSoul)
	var mu sync.Mutex
	n := 0
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		if strings.Contains(req.SystemText(), "You compress chat conversations") {
			return fake.TextReply("They discussed releases one, two and three.")
		}
		if _, _, isResult := lastResult(req); isResult {
			return fake.TextReply("")
		}
		mu.Lock()
		n++
		id := "toolu_" + strconv.Itoa(n)
		mu.Unlock()
		return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": "ack: " + heard(req)})
	}
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "release one"})
	h.expectReply("D0MGR", "100.1", "release one")
	for i, text := range []string{"release two", "release three"} {
		h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100." + strconv.Itoa(i+2), ThreadTS: "100.1", Text: text})
		h.expectReply("D0MGR", "100.1", text)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.9", ThreadTS: "100.1", Text: "/compact"})
	h.expectNotice("D0MGR", "100.1", "Compacted: 3 older messages")

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "101.0", ThreadTS: "100.1", Text: "and now?"})
	h.expectReply("D0MGR", "100.1", "and now?")
	reqs := h.model.Requests()
	msgs := string(reqs[len(reqs)-2].Messages)
	if !strings.Contains(msgs, strings.TrimSpace(agent.SummaryPrefix)) || !strings.Contains(msgs, "releases one, two and three") {
		t.Fatalf("the next turn does not start from the summary: %s", msgs)
	}
	if strings.Contains(msgs, "release one") {
		t.Fatalf("folded messages are still sent: %s", msgs)
	}
}
