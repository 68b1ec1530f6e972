package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	replyfeedback "github.com/persona-runtime/agent/internal/feedback"
)

// wireFeedback finds the feedback_buttons element of a post's blocks.
func wireFeedback(t *testing.T, blocks json.RawMessage) (actionID string, values []string) {
	t.Helper()
	var bs []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type           string `json:"type"`
			ActionID       string `json:"action_id"`
			PositiveButton struct {
				Value string `json:"value"`
			} `json:"positive_button"`
			NegativeButton struct {
				Value string `json:"value"`
			} `json:"negative_button"`
		} `json:"elements"`
	}
	if len(blocks) == 0 {
		return "", nil
	}
	if err := json.Unmarshal(blocks, &bs); err != nil {
		t.Fatalf("blocks %s: %v", blocks, err)
	}
	for _, b := range bs {
		for _, e := range b.Elements {
			if b.Type == "context_actions" && e.Type == "feedback_buttons" {
				return e.ActionID, []string{e.PositiveButton.Value, e.NegativeButton.Value}
			}
		}
	}
	return "", nil
}

// A turn's final reply carries the feedback buttons (an intermediate one
// and an apology do not); a click is stored, counted, acknowledged to the
// clicker only, replaced by a second click, and summarised by agent
// feedback; it is handled while a turn of the same thread still runs.
func TestFeedbackOnFinalReplies(t *testing.T) {
	h := newHarness(t, testSoul)
	held := make(chan struct{})
	var mu sync.Mutex
	n := 0
	h.model.Respond = func(fake.AnthropicRequest) fake.AnthropicResponse {
		mu.Lock()
		defer mu.Unlock()
		n++
		switch n {
		case 1:
			return fake.ToolUse("t1", "mcp__agent_chat__reply", map[string]string{"text": "first part"})
		case 2:
			return fake.ToolUse("t2", "mcp__agent_chat__reply", map[string]string{"text": "the **final** answer"})
		case 4:
			return fake.ToolUse("h1", "mcp__agent_chat__reply", map[string]string{"text": "working"})
		case 5:
			return fake.AnthropicResponse{Gate: held, Content: []fake.AnthropicBlock{fake.AnthropicText("")}}
		}
		return fake.TextReply("")
	}
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "question"})
	h.expectReply("D0MGR", "100.1", "the *final* answer")
	up, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { return strings.Contains(p.Text, "final") })
	if err != nil {
		t.Fatalf("no feedback update: %v\n%+v", err, h.slack.Posts())
	}
	if id, values := wireFeedback(t, up.Blocks); id != "feedback" || strings.Join(values, ",") != "good,bad" {
		t.Fatalf("final reply's buttons: %q %v in %s", id, values, up.Blocks)
	}
	for _, p := range append(h.slack.Posts(), h.slack.Updates()...) {
		if id, _ := wireFeedback(t, p.Blocks); id != "" && p.TS != up.TS {
			t.Errorf("message %q (%s) carries feedback buttons too", p.Text, p.TS)
		}
	}

	// A turn that is still running in the thread does not hold the click.
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.3", ThreadTS: "100.1", Text: "hold on"})
	h.expectNotice("D0MGR", "100.1", "working")
	click := func(value string) {
		h.slack.Send("interactive", fake.BlockActions{User: "U0MGR", Channel: "D0MGR", MessageTS: up.TS, ThreadTS: "100.1",
			ActionID: "feedback", Value: value, Type: "feedback_buttons", BlockID: "feedback"}.Payload(), 0)
	}
	click("bad")
	if _, err := h.slack.WaitForEphemeral(h.ctx(), func(p fake.Post) bool { return p.Text == replyfeedback.MsgBad && p.User == "U0MGR" }); err != nil {
		t.Fatalf("no private acknowledgement: %v", err)
	}
	click("good")
	if _, err := h.slack.WaitForEphemeral(h.ctx(), func(p fake.Post) bool { return p.Text == replyfeedback.MsgGood }); err != nil {
		t.Fatalf("no acknowledgement of the second click: %v", err)
	}
	close(held)
	h.waitMetric(`agent_reply_feedback_total{value="good"}`, 1)
	h.waitMetric(`agent_reply_feedback_total{value="bad"}`, 1)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENT_HOME": h.home, "HOME": h.home}
	out, _, code := runCLI(t, env, "feedback", "--json")
	var rec feedbackRecord
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec.Channel != "D0MGR" || rec.Good != 1 || rec.Bad != 0 || rec.Ratio != 1 {
		t.Fatalf("agent feedback --json: exit %d %q (the second click replaces the first)", code, out)
	}
	out, _, _ = runCLI(t, env, "feedback", "--since", "1d")
	if want := "CHANNEL  GOOD  BAD  GOOD %  WORST THREADS\nD0MGR    1     0    100%    -\n"; out != want {
		t.Errorf("agent feedback:\n%s\nwant:\n%s", out, want)
	}
}
