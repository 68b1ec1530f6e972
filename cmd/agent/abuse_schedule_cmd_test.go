package main

import (
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// A member can neither create, list nor remove a schedule, by command (the
// original runtime's aliases too) or by talking the model into the tools:
// a schedule acts later with its creator's authority, where nobody asked.
// The manager's schedule survives every attempt, and its prompt never
// reaches the member.
func TestAbuseMemberCannotSchedule(t *testing.T) {
	const refused = "only manager or approver can schedule work"
	h := newHarness(t, rulesSoul)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: `<@U0BOT> /schedule "@daily" "the quiet layoffs list"`})
	m := createdIDRE.FindStringSubmatch(h.expectNotice("C0TEAM", "100.1", "cron job created").Text)
	if m == nil {
		t.Fatal("no id")
	}
	id := m[1]

	ts := []string{"300.1", "300.2", "300.3", "300.4", "300.5", "300.6"}
	for i, text := range []string{`/schedule "@hourly" "ping everyone"`, `/cron-add "0 9 * * 1" "test"`, "/schedules", "/cron-list",
		"/unschedule " + id, "/cron-remove " + id} {
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: ts[i], Text: "<@U0BOT> " + text})
		if p := h.expectNotice("C0TEAM", ts[i], "only manager"); p.Text != refused {
			t.Errorf("%s: %q, want the refusal", text, p.Text)
		}
	}

	var results []string
	collect := func(next func(string, bool) fake.AnthropicResponse) func(string, bool) fake.AnthropicResponse {
		return func(res string, isErr bool) fake.AnthropicResponse {
			if isErr {
				results = append(results, res)
			}
			return next(res, isErr)
		}
	}
	h.script(
		use("m1", "mcp__agent_schedule__add", map[string]string{"when": "@hourly", "prompt": "ping everyone", "target": "channel"}),
		collect(use("m2", "mcp__agent_schedule__list", map[string]string{})),
		collect(use("m3", "mcp__agent_schedule__remove", map[string]string{"id": id})),
		collect(sayText("m4", "done")),
		end,
	)
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "400.1", Text: "<@U0BOT> schedule an hourly ping, list the schedules, drop " + id})
	h.expectReply("C0TEAM", "400.1", "done")
	if len(results) != 3 {
		t.Fatalf("%d of 3 tool calls refused: %q", len(results), results)
	}
	for _, r := range results {
		if r != refused {
			t.Errorf("tool result %q, want the refusal", r)
		}
	}
	for _, p := range h.slack.Posts() {
		if p.ThreadTS != "100.1" && strings.Contains(p.Text, "layoffs") {
			t.Errorf("the manager's prompt reached the member: %q", p.Text)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	out, _, _ := runCLI(t, map[string]string{"AGENT_HOME": h.home}, "schedules", "--json")
	if !strings.Contains(out, id) || strings.Contains(out, "ping everyone") {
		t.Fatalf("schedules after the member's attempts: %s", out)
	}
}
