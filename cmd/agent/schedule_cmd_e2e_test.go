package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// createdIDRE finds the id in a "cron job created" answer.
var createdIDRE = regexp.MustCompile(`cron job created: (s[a-z2-7]{8}), next run (\d{4}-\d\d-\d\d \d\d:\d\d [A-Za-z_/]+)`)

// The agent_schedule tools through the real service: the manager's turn
// adds a schedule in their profile's zone, lists it, removes it; a bad
// zone is a one-line error result; `agent schedules` sees what the tools
// made and removes what they made.
func TestToolSchedules(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.AddPerson(fake.Person{ID: "U0MGR", TZ: "Europe/Berlin"})
	var id string
	h.script(
		use("a1", "mcp__agent_schedule__add", map[string]string{"when": "0 9 * * 1-5", "prompt": "post the open incidents",
			"target": "channel", "name": "incidents"}),
		func(res string, isErr bool) fake.AnthropicResponse {
			if m := createdIDRE.FindStringSubmatch(res); m != nil && !isErr {
				id = m[1]
			}
			return say("r1")(res, isErr)
		},
		use("a2", "mcp__agent_schedule__add", map[string]string{"when": "@daily", "prompt": "x", "tz": "Mars/Olympus"}),
		say("r2"),
		use("a3", "mcp__agent_schedule__add", map[string]string{"when": "every day", "prompt": "x"}),
		say("r3"),
		use("l1", "mcp__agent_schedule__list", map[string]string{}),
		say("r4"),
		end,
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> every weekday at 9 post the open incidents here"})
	created := h.expectNotice("C0TEAM", "100.1", "cron job created: ")
	m := createdIDRE.FindStringSubmatch(created.Text)
	if m == nil || m[1] != id || !strings.HasSuffix(m[2], " 09:00 Europe/Berlin") || !strings.HasSuffix(created.Text, "(posts at the channel root)") {
		t.Fatalf("created: %q", created.Text)
	}
	h.expectNotice("C0TEAM", "100.1", `ERROR unknown time zone "Mars/Olympus" (want an IANA name like Europe/Berlin)`)
	h.expectNotice("C0TEAM", "100.1", "ERROR invalid cron expression: ")
	list := h.expectReply("C0TEAM", "100.1", "Active cron jobs:")
	if !strings.Contains(list.Text, id) || !strings.Contains(list.Text, "[channel]") || !strings.Contains(list.Text, "post the open incidents") {
		t.Fatalf("list: %q", list.Text)
	}

	// The same book as the commands: the manager removes it by command.
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.2", ThreadTS: "100.1", Text: "<@U0BOT> /schedules"})
	if p := h.expectNotice("C0TEAM", "100.1", id+" `0 9 * * 1-5` [channel] next run "); !strings.Contains(p.Text, "incidents: post the open incidents") {
		t.Errorf("/schedules: %q", p.Text)
	}
	h.script(use("d1", "mcp__agent_schedule__remove", map[string]string{"id": id}), say("r5"),
		use("d2", "mcp__agent_schedule__remove", map[string]string{"id": id}), say("r6"), end)
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.3", ThreadTS: "100.1", Text: "<@U0BOT> drop it"})
	h.expectNotice("C0TEAM", "100.1", "cron job "+id+" removed")
	h.expectReply("C0TEAM", "100.1", "ERROR no cron job "+id)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, map[string]string{"AGENT_HOME": h.home}, "schedules")
	if code != 0 || strings.TrimSpace(out) != "no schedules" {
		t.Fatalf("agent schedules after remove: %d %q %q", code, out, errs)
	}
}

// `agent schedules` lists every schedule, whichever conversation it was
// made in, as a table and as JSON; `agent schedules remove` removes one
// and names an unknown one.
func TestSchedulesCLI(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: `/schedule "@daily" "the budget review"`})
	dm := createdIDRE.FindStringSubmatch(h.expectNotice("D0MGR", "100.1", "cron job created").Text)
	h.send(fake.Message{User: "U0APP", Channel: "C0TEAM", TS: "200.1", Text: `<@U0BOT> /cron-add "0 9 * * 1" "weekly digest" channel`})
	team := createdIDRE.FindStringSubmatch(h.expectNotice("C0TEAM", "200.1", "cron job created").Text)
	if dm == nil || team == nil {
		t.Fatal("no ids")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENT_HOME": h.home}
	out, _, code := runCLI(t, env, "schedules")
	if code != 0 {
		t.Fatalf("agent schedules exit %d", code)
	}
	for _, want := range []string{"ID", "NEXT RUN", dm[1], team[1], "the budget review", "weekly digest", "D0MGR:100.1", "U0APP", "channel"} {
		if !strings.Contains(out, want) {
			t.Errorf("agent schedules lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runCLI(t, env, "schedules", "--json")
	var records []scheduleRecord
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r scheduleRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("agent schedules --json: %v: %s", err, line)
		}
		records = append(records, r)
	}
	if code != 0 || len(records) != 2 {
		t.Fatalf("agent schedules --json: %d %s", code, out)
	}
	byID := map[string]scheduleRecord{}
	for _, r := range records {
		byID[r.ID] = r
	}
	if r := byID[team[1]]; r.Creator != "U0APP" || r.Channel != "C0TEAM" || r.Target != "channel" || r.When != "0 9 * * 1" ||
		r.TZ != "UTC" || r.NextRunAt == nil || r.LastRunAt != nil {
		t.Errorf("json record: %+v", r)
	}
	out, _, code = runCLI(t, env, "schedules", "remove", dm[1])
	if code != 0 || strings.TrimSpace(out) != "removed schedule "+dm[1] {
		t.Fatalf("remove: %d %q", code, out)
	}
	_, errs, code := runCLI(t, env, "schedules", "remove", dm[1])
	if code != 1 || !strings.Contains(errs, `no schedule "`+dm[1]+`"`) {
		t.Fatalf("remove again: %d %q", code, errs)
	}
	_, errs, code = runCLI(t, env, "schedules", "drop", "x")
	if code != 2 || !strings.Contains(errs, "usage: agent schedules") {
		t.Fatalf("bad args: %d %q", code, errs)
	}
	out, _, _ = runCLI(t, env, "schedules", "--json")
	if strings.Contains(out, dm[1]) || !strings.Contains(out, team[1]) {
		t.Fatalf("after remove: %s", out)
	}
}
