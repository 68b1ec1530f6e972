package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// The search tool reads the workspace as the person asking sees it,
// through the platform's real-time search with their message's action
// token: in a channel only public channels (a private conversation never
// reaches a more public place), in their DM also what they alone may see;
// results are redacted; without an action token it says the pinned line
// and the platform is not asked.
func TestSearchActsAsThePersonAsking(t *testing.T) {
	h := newHarness(t, gatekeeperSoul)
	h.slack.Searchable = []fake.SearchMessage{
		{Channel: "C0INFRA", ChannelName: "infra", TS: "100.1", User: "U0ALICE", Text: "we decided the migration runs Friday"},
		{Channel: "G0SEC", ChannelName: "sec", ChannelType: "private_channel", TS: "100.2", User: "U0MGR",
			Text: "private: the migration key is " + fake.DefaultBotToken, Members: []string{"U0MGR"}},
		{Channel: "D0OTHER", ChannelType: "im", TS: "100.3", User: "U0ALICE", Text: "alice's DM about the migration", Members: []string{"U0ALICE"}},
	}
	var n atomic.Int64
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		id := fmt.Sprintf("toolu_%d", n.Add(1))
		msgs := req.ParsedMessages()
		if res, isErr, ok := lastResult(req); ok {
			prev := msgs[len(msgs)-2].Content
			if prev[len(prev)-1].Name != "mcp__agent_chat__search" {
				return fake.TextReply("")
			}
			if isErr {
				res = "ERROR " + res
			}
			return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": "found: " + res})
		}
		return fake.ToolUse(id, "mcp__agent_chat__search", map[string]any{"query": "migration"})
	}
	h.start()
	c := &connectHarness{harness: h}

	// A member in a channel: public channels only.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "600.1", Text: "<@U0BOT> what did infra decide?",
		ActionToken: fake.ActionTokenFor("U0ALICE")})
	p := c.waitReply("C0TEAM", "600.1", "found:")
	if !strings.Contains(p.Text, "migration runs Friday") || strings.Contains(p.Text, "DM about") || strings.Contains(p.Text, "private") {
		t.Fatalf("channel search answer: %q", p.Text)
	}
	if got := searches(h); len(got) != 1 || got[0].Params.Get("channel_types") != "public_channel" ||
		got[0].Params.Get("action_token") != fake.ActionTokenFor("U0ALICE") {
		t.Fatalf("search requests: %+v", got)
	}

	// The manager in their DM: also what they may see privately, redacted.
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "601.1", Text: "what about the migration?",
		ActionToken: fake.ActionTokenFor("U0MGR")})
	p = c.waitReply("D0MGR", "601.1", "found:")
	if !strings.Contains(p.Text, "private: the migration key is") || strings.Contains(p.Text, fake.DefaultBotToken) {
		t.Fatalf("DM search answer: %q", p.Text)
	}

	// No action token (a message the platform gave none): the pinned line.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "602.1", Text: "<@U0BOT> search again"})
	c.waitReply("C0TEAM", "602.1", "ERROR search needs a person's message to act for")
	if got := searches(h); len(got) != 2 {
		t.Fatalf("the platform was asked without a token: %d searches", len(got))
	}
}

// waitReply waits for a post in the thread containing want.
func (h *connectHarness) waitReply(channel, thread, want string) fake.Post {
	h.t.Helper()
	p, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return p.Channel == channel && p.ThreadTS == thread && strings.Contains(p.Text, want)
	})
	if err != nil {
		h.t.Fatalf("no %q in %s/%s: %v\nposts %+v\nlogs:\n%s", want, channel, thread, err, h.slack.Posts(), h.logs)
	}
	return p
}

// searches are the assistant.search.context calls so far.
func searches(h *harness) []fake.Request {
	var out []fake.Request
	for _, r := range h.slack.Requests() {
		if r.Method == "assistant.search.context" {
			out = append(out, r)
		}
	}
	return out
}
