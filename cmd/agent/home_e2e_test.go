package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// homeSoul is testSoul with a backup, an approver and budgets.
const homeSoul = testSoul + `- Backup: U0BACKUP

## Budgets
- Persona: 100k tokens/day
- Person: 20k tokens/day
`

// openHome opens user's Home tab and returns the view published next for
// them (after the n views already published for anyone).
func (h *harness) openHome(user string) fake.View {
	h.t.Helper()
	n := len(h.slack.Views())
	h.slack.SendEvent(fake.AppHomeOpened{User: user, Channel: "D" + user[1:], Tab: "home"}.Payload())
	return h.nextView(user, n)
}

func (h *harness) nextView(user string, after int) fake.View {
	h.t.Helper()
	seen := 0
	v, err := h.slack.WaitForView(h.ctx(), func(v fake.View) bool {
		seen++
		return seen > after && v.User == user
	})
	if err != nil {
		h.t.Fatalf("no view for %s: %v\nlogs:\n%s", user, err, h.logs)
	}
	return v
}

func (h *harness) clickHome(user, action, value string) fake.View {
	h.t.Helper()
	n := len(h.slack.Views())
	h.slack.Send("interactive", fake.HomeClick{User: user, ActionID: action, Value: value}.Payload(), 0)
	return h.nextView(user, n)
}

var scheduleButton = regexp.MustCompile(`"action_id":"home_remove_schedule".*?"value":"(s[a-z0-9]+)"`)

// The Home tab through the service: a member's view holds their threads
// and their memories (with a Forget button), nothing of another person's
// and none of the managers' sections; the manager's holds their schedule,
// today's spend against each budget line, the cards waiting, the modes
// and the mutes, and nothing of the member's memories. A member's forged
// click on the manager's schedule is refused by the schedules' own rule
// (the schedule stays); the manager's removes it; the member's Forget
// forgets their memory; every click republishes the clicker's view.
func TestHomeTab(t *testing.T) {
	h := newHarness(t, homeSoul)
	h.script(
		use("m1", toolRemember, map[string]string{"text": "Alice takes her tea green"}),
		say("r1"),
		end,
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: `/schedule "@daily" "the daily release report"`})
	if _, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return strings.Contains(p.Text, "cron job created") }); err != nil {
		t.Fatal(err)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "/ignore <@U0EVE> 2h"})
	if _, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return strings.Contains(p.Text, "U0EVE") }); err != nil {
		t.Fatal(err)
	}
	h.send(fake.Message{User: "U0ALICE", Channel: "D0ALICE", TS: "200.1", Text: "remember my tea"})
	h.expectReply("D0ALICE", "200.1", "remembered as m")

	member := string(h.openHome("U0ALICE").Blocks)
	for _, want := range []string{"Your recent threads with me", "https://slack.com/archives/D0ALICE/p2001", "Alice takes her tea green",
		`"action_id":"home_forget_memory"`, "Your schedules"} {
		if !strings.Contains(member, want) {
			t.Errorf("the member's view lacks %q:\n%s", want, member)
		}
	}
	for _, not := range []string{"daily release report", "D0MGR", "Today's spend", "Cards waiting", "Mutes in force"} {
		if strings.Contains(member, not) {
			t.Errorf("the member's view shows %q:\n%s", not, member)
		}
	}

	manager := string(h.openHome("U0MGR").Blocks)
	for _, want := range []string{"daily release report", `"action_id":"home_remove_schedule"`, "Today's spend", "tokens today, about $",
		"persona: ", "of 100000 tokens today", `person \u003c@U0ALICE\u003e`, "Cards waiting for a decision",
		"Channels' permission modes", "Mutes in force"} {
		if !strings.Contains(manager, want) {
			t.Errorf("the manager's view lacks %q:\n%s", want, manager)
		}
	}
	if strings.Contains(manager, "tea green") {
		t.Errorf("the manager's view shows the member's memory:\n%s", manager)
	}
	m := scheduleButton.FindStringSubmatch(manager)
	if m == nil {
		t.Fatalf("no remove button in the manager's view:\n%s", manager)
	}
	id := m[1]

	// The member's forged click on the manager's schedule: refused by
	// the schedules' rule, the schedule kept; their own view republished.
	refused := string(h.clickHome("U0ALICE", "home_remove_schedule", id).Blocks)
	if !strings.Contains(refused, "only manager or approver can schedule work") {
		t.Errorf("the member's click was not refused:\n%s", refused)
	}
	if again := string(h.openHome("U0MGR").Blocks); !strings.Contains(again, id) {
		t.Fatalf("the member's click removed the manager's schedule:\n%s", again)
	}
	removed := string(h.clickHome("U0MGR", "home_remove_schedule", id).Blocks)
	if !strings.Contains(removed, "removed") || strings.Contains(removed, "daily release report") {
		t.Errorf("the manager's remove:\n%s", removed)
	}
	mem := regexp.MustCompile(`"action_id":"home_forget_memory".*?"value":"(m[a-z0-9]+)"`).FindStringSubmatch(member)
	if mem == nil {
		t.Fatalf("no forget button:\n%s", member)
	}
	forgot := string(h.clickHome("U0ALICE", "home_forget_memory", mem[1]).Blocks)
	if strings.Contains(forgot, "tea green") {
		t.Errorf("the memory was not forgotten:\n%s", forgot)
	}

	// The mutes: shown to the manager with a Lift button; a member's
	// forged Lift is refused by the mute commands' rule, the manager's
	// lifts it.
	if !strings.Contains(manager, `"value":"user U0EVE"`) {
		t.Fatalf("no mute in the manager's view:\n%s", manager)
	}
	if v := string(h.clickHome("U0ALICE", "home_lift_mute", "user U0EVE").Blocks); !strings.Contains(v, "only manager or approver can ignore") {
		t.Errorf("the member's lift was not refused:\n%s", v)
	}
	if v := string(h.clickHome("U0MGR", "home_lift_mute", "user U0EVE").Blocks); !strings.Contains(v, "mute lifted") || strings.Contains(v, `"value":"user U0EVE"`) {
		t.Errorf("the manager's lift:\n%s", v)
	}
}
