package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// The agent_chat read tools and reactions through the real service,
// against the Slack fake: each reads the turn's own conversation, in
// pages, redacted, never behind a card (the harness's mode is ask).

// toolResults are the tool results the model received, in order.
func (h *harness) toolResults() []string {
	var out []string
	for _, req := range h.model.Requests() {
		if res, _, ok := lastResult(req); ok {
			out = append(out, res)
		}
	}
	return out
}

// end ends a turn: the model says nothing more.
func end(string, bool) fake.AnthropicResponse { return fake.TextReply("") }

var cursorRE = regexp.MustCompile(`more: call again with cursor "([^"]+)"\.$`)

// withCursor calls tool again with the cursor the last result ended with.
func withCursor(id, tool string, input map[string]any) func(string, bool) fake.AnthropicResponse {
	return func(res string, _ bool) fake.AnthropicResponse {
		in := map[string]any{}
		for k, v := range input {
			in[k] = v
		}
		if m := cursorRE.FindStringSubmatch(res); m != nil {
			in["cursor"] = m[1]
		}
		return fake.ToolUse(id, tool, in)
	}
}

// noCards fails the test when the service posted an approval card.
func (h *harness) noCards() {
	h.t.Helper()
	for _, p := range h.slack.Posts() {
		if len(p.Blocks) > 0 && strings.Contains(string(p.Blocks), `"approve"`) {
			h.t.Fatalf("a read tool asked for a card: %s", p.Blocks)
		}
	}
}

// reads are the Web API reads the service made, "method channel".
func (h *harness) reads(methods ...string) []string {
	var out []string
	for _, r := range h.slack.Requests() {
		if slices.Contains(methods, r.Method) {
			out = append(out, r.Method+" "+r.Params.Get("channel"))
		}
	}
	return out
}

// A mention in a busy thread: the agent reads the thread in pages, each
// message in its envelope with its author's role (the manager, a member,
// another bot, itself), the redaction patterns applied; a rate limit is
// waited out.
func TestToolThreadHistory(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.AddHistory(
		fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "300.1", Text: "deploy failed for ACME-123456"},
		fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.2", ThreadTS: "300.1", Text: "on it"},
		fake.Message{Channel: "C0TEAM", TS: "300.3", ThreadTS: "300.1", BotID: "B0CI", Subtype: "bot_message", Text: "build 42 red"},
	)
	h.slack.Fail("conversations.replies", "ratelimited:0")
	h.script(
		use("t1", "mcp__agent_chat__get_thread_history", map[string]any{"limit": 2}),
		withCursor("t2", "mcp__agent_chat__get_thread_history", map[string]any{"limit": 2}),
		sayText("r1", "read it"),
	)
	h.start()
	h.send(fake.Message{User: "U0APP", Channel: "C0TEAM", TS: "300.4", ThreadTS: "300.1", Text: "<@U0BOT> what broke?"})
	h.expectReply("C0TEAM", "300.1", "read it")
	res := h.toolResults()
	if len(res) < 2 {
		t.Fatalf("tool results: %q", res)
	}
	first, second := res[0], res[1]
	for _, want := range []string{
		`[300.1] <message from="<@U0MGR>" role="manager">deploy failed for [redacted: acme account number]</message>`,
		`[300.2] <message from="<@U0ALICE>" role="member">on it</message>`,
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first page lacks %s:\n%s", want, first)
		}
	}
	for _, want := range []string{
		`[300.3] <message from="<@B0CI>" role="bot">build 42 red</message>`,
		`[300.4] <message from="<@U0APP>" role="approver"><@U0BOT> what broke?</message>`,
		"end of the thread.",
	} {
		if !strings.Contains(second, want) {
			t.Errorf("second page lacks %s:\n%s", want, second)
		}
	}
	if strings.Contains(first+second, "ACME-123456") {
		t.Error("a redaction pattern's match reached the model")
	}
	if got := h.reads("conversations.replies"); len(got) != 4 || slices.ContainsFunc(got, func(r string) bool { return r != "conversations.replies C0TEAM" }) {
		t.Errorf("reads = %q, want four of C0TEAM (the context read on engagement, three by the tool, one rate limited)", got)
	}
	h.noCards()
}

// In a DM the channel history is the DM's, newest first, in pages.
func TestToolChannelHistory(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.AddHistory(
		fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "50.1", Text: "remind me about the audit"},
		fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "60.1", Text: "and the offsite"},
		fake.Message{User: "U0MGR", Channel: "D0OTHER", TS: "61.1", Text: "another DM"},
	)
	h.script(
		use("t1", "mcp__agent_chat__get_channel_history", map[string]any{"limit": 2}),
		withCursor("t2", "mcp__agent_chat__get_channel_history", map[string]any{"limit": 2}),
		sayText("r1", "read it"),
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "what did I ask you?"})
	h.expectReply("D0MGR", "100.1", "read it")
	res := h.toolResults()
	want1 := "messages of this conversation, newest first:\n" +
		`[100.1] <message from="<@U0MGR>" role="manager">what did I ask you?</message>` + "\n" +
		`[60.1] <message from="<@U0MGR>" role="manager">and the offsite</message>` + "\n"
	if len(res) < 2 || !strings.HasPrefix(res[0], want1) || !strings.Contains(res[1], "[50.1]") ||
		!strings.HasSuffix(res[1], "no older messages.") || strings.Contains(res[0]+res[1], "another DM") {
		t.Fatalf("channel history:\n%q", res)
	}
	h.noCards()
}

// A person's profile: the public fields and their role; never the email
// or the phone; looked up once for several calls.
func TestToolGetUser(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.AddPerson(fake.Person{ID: "U0APP", Name: "ann", RealName: "Ann Approver", Title: "Release manager",
		Email: "ann@example.com", Phone: "+1 555 0100", TZ: "Europe/Paris", TZLabel: "Central European Summer Time"})
	h.script(
		use("t1", "mcp__agent_chat__get_user", map[string]string{"user_id": "<@U0APP>"}),
		use("t2", "mcp__agent_chat__get_user", map[string]string{"user_id": "U0APP"}),
		say("r1"),
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "who is U0APP?"})
	p := h.expectReply("D0MGR", "100.1", "Release manager")
	want := "user <@U0APP>\nname: ann\nreal name: Ann Approver\ntitle: Release manager\n" +
		"time zone: Europe/Paris (Central European Summer Time)\nbot: no\nrole to you: approver"
	if res := h.toolResults(); len(res) < 2 || res[0] != want || res[1] != want {
		t.Fatalf("get_user:\n%q\nwant:\n%s", res, want)
	}
	if strings.Contains(p.Text, "example.com") || strings.Contains(p.Text, "555") {
		t.Errorf("contact details reached the thread: %q", p.Text)
	}
	if n := len(h.reads("users.info")); n != 1 {
		t.Errorf("users.info called %d times, want 1 (cached)", n)
	}
	h.noCards()
}

// The conversation's info and members, with the trust layer and roles.
func TestToolChannelInfoAndMembers(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.AddConversation(fake.Conversation{ID: "C0PUB", Name: "general", Topic: "everything", Purpose: "the company",
		Creator: "U0MGR", Members: []string{"U0MGR", "U0ALICE", "U0APP", fake.DefaultBotUserID}})
	h.script(
		use("t1", "mcp__agent_chat__get_channel_info", map[string]any{}),
		use("t2", "mcp__agent_chat__list_channel_members", map[string]any{"limit": 3}),
		withCursor("t3", "mcp__agent_chat__list_channel_members", map[string]any{"limit": 3}),
		sayText("r1", "looked"),
	)
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0PUB", TS: "700.1", Text: "<@U0BOT> who is here?"})
	h.expectReply("C0PUB", "700.1", "looked")
	res := h.toolResults()
	if len(res) < 3 {
		t.Fatalf("results: %q", res)
	}
	wantInfo := "this conversation: C0PUB, a public channel\nname: #general\ntopic: everything\npurpose: the company\n" +
		"members: 4\ncreated: 2020-09-13\ncreated by: <@U0MGR>\ntrust layer: allowed"
	if res[0] != wantInfo {
		t.Errorf("info:\n%s\nwant:\n%s", res[0], wantInfo)
	}
	if !strings.HasPrefix(res[1], "members of this conversation:\n<@U0MGR> manager\n<@U0ALICE> member\n<@U0APP> approver\nmore: ") ||
		res[2] != "members of this conversation:\n<@"+fake.DefaultBotUserID+"> (you)\nthat is all of them." {
		t.Errorf("members:\n%q", res[1:])
	}
	if got := h.reads("conversations.info", "conversations.members"); !slices.Equal(got,
		[]string{"conversations.info C0PUB", "conversations.members C0PUB", "conversations.members C0PUB"}) {
		t.Errorf("reads = %q", got)
	}
	h.noCards() // in the allowed (public) layer too
}

// A reaction lands on the message being answered, or on the message a ts
// names in this conversation; unreact takes it off.
func TestToolReactions(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.AddHistory(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "300.1", Text: "ship it"})
	h.script(
		use("t1", "mcp__agent_chat__react", map[string]string{"name": "eyes"}),
		use("t2", "mcp__agent_chat__react", map[string]string{"name": ":white_check_mark:", "ts": "300.1"}),
		use("t3", "mcp__agent_chat__react", map[string]string{"name": "tada", "ts": "300.1"}),
		use("t4", "mcp__agent_chat__unreact", map[string]string{"name": "tada", "ts": "300.1"}),
		use("t5", "mcp__agent_chat__unreact", map[string]string{"name": "eyes"}),
		sayText("r1", "done"),
	)
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.2", ThreadTS: "300.1", Text: "<@U0BOT> shipped?"})
	h.expectReply("C0TEAM", "300.1", "done")
	want := []string{"reacted :eyes: to 300.2", "reacted :white_check_mark: to 300.1", "reacted :tada: to 300.1",
		"removed :tada: from 300.1", "removed :eyes: from 300.2"}
	if res := h.toolResults(); len(res) < 5 || !slices.Equal(res[:5], want) {
		t.Fatalf("results = %q, want %q", res, want)
	}
	if got := h.slack.Reactions("C0TEAM", "300.1"); !slices.Equal(got, []string{"white_check_mark"}) {
		t.Errorf("reactions on the root = %q", got)
	}
	if got := h.slack.Reactions("C0TEAM", "300.2"); len(got) != 0 {
		t.Errorf("reactions on the message answered = %q", got)
	}
	h.noCards()
}

// A cursor names the listing that gave it: in the same thread, a thread
// history's cursor does not page the channel's history or its members.
func TestToolReadCursorOfAnotherListing(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.AddHistory(
		fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "300.1", Text: "first"},
		fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.2", ThreadTS: "300.1", Text: "second"},
	)
	var cursor string
	h.script(
		use("t1", "mcp__agent_chat__get_thread_history", map[string]any{"limit": 1}),
		func(res string, _ bool) fake.AnthropicResponse {
			if m := cursorRE.FindStringSubmatch(res); m != nil {
				cursor = m[1]
			}
			return fake.ToolUse("t2", "mcp__agent_chat__get_channel_history", map[string]string{"cursor": cursor})
		},
		func(string, bool) fake.AnthropicResponse {
			return fake.ToolUse("t3", "mcp__agent_chat__list_channel_members", map[string]string{"cursor": cursor})
		},
		say("r1"),
	)
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "300.3", ThreadTS: "300.1", Text: "<@U0BOT> page it"})
	h.expectReply("C0TEAM", "300.1", "ERROR cursor refused")
	res := h.toolResults()
	if len(res) < 3 || cursor == "" {
		t.Fatalf("results: %q", res)
	}
	for _, r := range res[1:3] {
		if !strings.HasPrefix(r, "cursor refused: ") || strings.Contains(r, "\n") {
			t.Errorf("a cursor of the thread used elsewhere: %q", r)
		}
	}
	if got := h.reads("conversations.history", "conversations.members"); len(got) != 0 {
		t.Errorf("the refused calls read the platform: %q", got)
	}
}

// A rate limit longer than a turn should wait is not waited out: the tool
// says how long, at once, and the model goes on (the waits themselves run on
// the chat's clock: slackio's TestReadWaitsOutRetryAfter).
func TestToolReadRateLimitedTooLong(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.Fail("conversations.info", "ratelimited:60")
	h.script(
		use("t1", "mcp__agent_chat__get_channel_info", map[string]any{}),
		say("r1"),
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "where are we?"})
	p := h.expectReply("D0MGR", "100.1", "ERROR ")
	if !strings.Contains(p.Text, "rate limited by the chat platform; try again in 1m0s") {
		t.Errorf("reply = %q", p.Text)
	}
	if got := h.reads("conversations.info"); len(got) != 1 {
		t.Errorf("reads = %q, want one", got)
	}
}
