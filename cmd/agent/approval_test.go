package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/store"
)

// cardButtons returns the buttons of a posted card: action_id → value.
func cardButtons(t testing.TB, p fake.Post) map[string]string {
	t.Helper()
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(p.Blocks, &blocks); err != nil {
		t.Fatalf("card blocks: %v\n%s", err, p.Blocks)
	}
	out := map[string]string{}
	for _, b := range blocks {
		if b.Type == "actions" {
			for _, e := range b.Elements {
				out[e.ActionID] = e.Value
			}
		}
	}
	return out
}

// scriptApproval makes the model ask for an approval, then reply with the
// outcome it was given.
func (h *harness) scriptApproval(category, summary string) {
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		b := last[len(last)-1]
		if b.Type != "tool_result" {
			return fake.ToolUse("toolu_ask", "mcp__agent_chat__request_approval", map[string]string{"category": category, "summary": summary})
		}
		if b.ToolUseID == "toolu_ask" {
			return fake.ToolUse("toolu_say", "mcp__agent_chat__reply", map[string]string{"text": b.ResultText()})
		}
		return fake.TextReply("")
	}
}

func (h *harness) click(user string, card fake.Post, action string) {
	h.t.Helper()
	buttons := cardButtons(h.t, card)
	h.slack.Send("interactive", fake.BlockActions{User: user, Channel: card.Channel, MessageTS: card.TS, ThreadTS: card.ThreadTS,
		ActionID: action, Value: buttons[action]}.Payload(), 0)
}

func TestApprovalRoundTrip(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.scriptApproval("deploy", "deploy prod")
	h.start()
	ctx := h.ctx()

	// In the team's channel, where the approver and a member can click
	// the card too (no one but its owner sees a DM).
	h.slack.SendEvent(fake.AppMention{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> ship it"}.Payload())
	card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 })
	if err != nil {
		t.Fatalf("no card: %v\nlogs:\n%s", err, h.logs)
	}
	if card.ThreadTS != "100.1" || !strings.Contains(string(card.Blocks), "deploy prod") {
		t.Fatalf("card = %+v", card)
	}
	buttons := cardButtons(t, card)
	if buttons["approve"] == "" || buttons["deny"] == "" || buttons["always"] != "" {
		t.Fatalf("buttons = %v (request_approval cards offer approve and deny)", buttons)
	}

	// A member may not decide: only they are told, and nothing changes.
	h.click("U0ALICE", card, "approve")
	eph, err := h.slack.WaitForEphemeral(ctx, func(p fake.Post) bool { return p.User == "U0ALICE" })
	if err != nil || !strings.Contains(eph.Text, "can't decide `deploy`") {
		t.Fatalf("ephemeral = %+v, %v", eph, err)
	}
	if len(h.slack.Updates()) != 0 {
		t.Fatal("an unauthorised click changed the card")
	}

	// The approver decides: the card shows who, and the agent says so.
	h.click("U0APP", card, "approve")
	upd, err := h.slack.WaitForUpdate(ctx, func(p fake.Post) bool { return p.TS == card.TS })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(upd.Text, "approved by <@U0APP>") || strings.Contains(string(upd.Blocks), `"actions"`) {
		t.Fatalf("updated card = %s / %s", upd.Text, upd.Blocks)
	}
	h.expectReply("C0TEAM", "100.1", "approved by <@U0APP>")

	// A second click is too late.
	h.click("U0MGR", card, "deny")
	if _, err := h.slack.WaitForEphemeral(ctx, func(p fake.Post) bool { return strings.Contains(p.Text, "already decided") }); err != nil {
		t.Fatal(err)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// The audit has the whole story.
	out, _, code := runCLI(t, map[string]string{"AGENT_HOME": h.home}, "audit", "--json")
	if code != 0 {
		t.Fatalf("audit exit %d", code)
	}
	for _, want := range []string{`"category":"deploy"`, `"state":"approved"`, `"decided_by":"U0APP"`, `"requested_by":"U0MGR"`} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %s:\n%s", want, out)
		}
	}
}

func TestApprovalDeniedAndTimedOut(t *testing.T) {
	h := newHarness(t, rulesSoul+"\n## Approval timeout\n- 1\n")
	h.scriptApproval("deploy", "deploy prod")
	h.start()
	ctx := h.ctx()

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "ship it"})
	card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 && p.ThreadTS == "100.1" })
	if err != nil {
		t.Fatal(err)
	}
	h.click("U0BACKUP", card, "deny")
	h.expectReply("D0MGR", "100.1", "denied by <@U0BACKUP>")

	// Nobody clicks: after the persona's timeout (1 s) the card says so.
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "200.1", Text: "again"})
	card2, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 && p.ThreadTS == "200.1" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.slack.WaitForUpdate(ctx, func(p fake.Post) bool { return p.TS == card2.TS && strings.Contains(p.Text, "timed out") }); err != nil {
		t.Fatal(err)
	}
	h.expectReply("D0MGR", "200.1", "timed out")
}

func TestPendingApprovalExpiresAtStart(t *testing.T) {
	h := newHarness(t, rulesSoul)
	// A card a previous run posted and never saw decided.
	resp, err := http.PostForm(h.slack.URL()+"chat.postMessage", url.Values{"token": {fake.DefaultBotToken},
		"channel": {"D0MGR"}, "thread_ts": {"100.1"}, "text": {"Approval needed (deploy): deploy prod"}})
	if err != nil {
		t.Fatal(err)
	}
	var posted struct{ TS string }
	json.NewDecoder(resp.Body).Decode(&posted)
	resp.Body.Close()
	st, err := store.Open(context.Background(), filepath.Join(h.home, "db.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateApproval(context.Background(), store.Approval{ID: "old", ThreadKey: "D0MGR:100.1", ChannelID: "D0MGR",
		ThreadTS: "100.1", CardTS: posted.TS, Category: "deploy", Summary: "deploy prod", RequestedBy: "U0MGR"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h.start()
	upd, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { return p.TS == posted.TS })
	if err != nil || !strings.Contains(upd.Text, "expired") {
		t.Fatalf("update = %+v, %v", upd, err)
	}
}
