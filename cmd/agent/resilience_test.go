package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

func TestModelUnavailableTellsTheThread(t *testing.T) {
	h := newHarness(t, testSoul)
	overloaded := fake.AnthropicResponse{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded", RetryAfterMs: "0"}
	h.model.Respond = func(fake.AnthropicRequest) fake.AnthropicResponse { return overloaded }
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "are you there?"})
	p, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return p.Channel == "D0MGR" })
	if err != nil {
		t.Fatalf("no message to the thread: %v\nlogs:\n%s", err, h.logs)
	}
	if p.ThreadTS != "100.1" || !strings.Contains(p.Text, "model is unavailable") {
		t.Fatalf("post = %+v", p)
	}
	if n := len(h.model.Requests()); n < 2 {
		t.Fatalf("model requests = %d: the client did not retry", n)
	}
	// The user's message stays in the history: the next turn carries it.
	h.model.Respond = nil
	h.answerAll()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "now?"})
	h.expectReply("D0MGR", "100.1", "now?")
	reqs := h.model.Requests()
	if last := string(reqs[len(reqs)-2].Messages); !strings.Contains(last, "are you there?") {
		t.Fatalf("the failed turn's message is not in the history: %s", last)
	}
}

func TestBadEnvelopesAreSurvived(t *testing.T) {
	h := newHarness(t, testSoul)
	h.answerAll()
	h.start()
	h.slack.SendRaw([]byte(`{"envelope_id":"bad-1","type":"events_api","payload":{"event":`))
	h.slack.SendRaw([]byte(`not json at all`))
	unknown := h.slack.Send("events_api", fake.EventCallback("EvX", "", map[string]any{"type": "reaction_added", "user": "U0MGR"}), 0)
	if err := h.slack.WaitAck(h.ctx(), unknown); err != nil {
		t.Fatalf("an unknown event type was not acked: %v", err)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "still alive?"})
	h.expectReply("D0MGR", "100.1", "still alive?")
}

func TestAbortStopsARunningTurn(t *testing.T) {
	h := newHarness(t, testSoul)
	held := make(chan struct{})
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		if strings.Contains(req.LastUserText(), "long job") {
			return fake.AnthropicResponse{Gate: held, Content: []fake.AnthropicBlock{fake.AnthropicText("...")}}
		}
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		if last[len(last)-1].Type == "tool_result" {
			return fake.TextReply("")
		}
		return fake.ToolUse("toolu_1", "mcp__agent_chat__reply", map[string]string{"text": "ack: " + heard(req)})
	}
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "long job"})
	if err := h.model.WaitRequests(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "/abort"})
	h.expectNotice("D0MGR", "100.1", "aborted: I stopped the running turn")
	h.waitMetric(`agent_turns_total{outcome="aborted"}`, 1)
	close(held)
	// The session stays usable.
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.3", ThreadTS: "100.1", Text: "next"})
	h.expectReply("D0MGR", "100.1", "next")
}

func TestIdleCloseAndResume(t *testing.T) {
	h := newHarness(t, testSoul)
	h.env["AGENT_IDLE_MINUTES"] = "0.002" // 120 ms
	h.answerAll()
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "first"})
	h.expectReply("D0MGR", "100.1", "first")
	h.waitLog("session closed")
	if got := h.metric("agent_sessions_live"); got != 0 {
		t.Fatalf("agent_sessions_live = %v after idle close", got)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "second"})
	h.expectReply("D0MGR", "100.1", "second")
	h.waitLog("session resumed")
	reqs := h.model.Requests()
	if msgs := string(reqs[len(reqs)-2].Messages); !strings.Contains(msgs, "first") {
		t.Fatalf("resumed session lacks the history: %s", msgs)
	}
}

// expectNotice waits for a runtime message (not counted as a turn).
func (h *harness) expectNotice(channel, thread, text string) fake.Post {
	h.t.Helper()
	p, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return p.Channel == channel && p.ThreadTS == thread && strings.Contains(p.Text, text)
	})
	if err != nil {
		h.t.Fatalf("no %q in %s/%s: %v\nposts: %+v\nlogs:\n%s", text, channel, thread, err, h.slack.Posts(), h.logs)
	}
	return p
}

// A reply the platform refuses is not silent: it is logged with the
// platform's error, counted, and the model is told it was not delivered
// (so the history keeps it as undelivered); a failure that may pass is
// retried and the answer lands once.
func TestDeliveryFailuresAreToldAndCounted(t *testing.T) {
	h := newHarness(t, testSoul)
	n := 0
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		n++
		id := "toolu_" + strconv.Itoa(n)
		switch {
		case last[len(last)-1].Type != "tool_result":
			if strings.Contains(req.LastUserText(), "one") {
				return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": "first answer"})
			}
			return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": "second answer"})
		case strings.Contains(last[len(last)-1].ResultText(), "not delivered"):
			// Told that its words were not seen, and why: it says less.
			return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": "short answer"})
		}
		return fake.TextReply("")
	}
	h.slack.Fail("chat.postMessage", "msg_too_long")
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "one"})
	h.expectReply("D0MGR", "100.1", "short answer")
	if !strings.Contains(h.logs.String(), `"msg":"chat: message not delivered","method":"chat.postMessage","channel_id":"D0MGR","error":"msg_too_long"`) {
		t.Errorf("the platform's error is not logged:\n%s", h.logs)
	}
	reqs := h.model.Requests()
	if told := string(reqs[1].Messages); !strings.Contains(told, "not delivered") || !strings.Contains(told, "msg_too_long") {
		t.Errorf("the model was not told why: %s", told)
	}
	// A server error before the post is retried: one answer.
	h.slack.Fail("chat.postMessage", "http:503")
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", Text: "two"})
	h.expectReply("D0MGR", "100.2", "second answer")
	_, metrics := h.get("/metrics")
	if !strings.Contains(metrics, `agent_chat_delivery_failures_total{error="msg_too_long"} 1`) {
		t.Errorf("delivery failure not counted:\n%s", grepLines(metrics, "agent_chat_delivery"))
	}
	count := 0
	for _, p := range h.slack.Posts() {
		if p.Text == "second answer" {
			count++
		}
	}
	if count != 1 {
		t.Errorf("the retried answer was posted %d times", count)
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
