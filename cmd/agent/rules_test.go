package main

import (
	"bufio"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// gatekeeperSoul is the start of the rule tests' personas: who it is, its
// managers and its team's channel.
const gatekeeperSoul = `# Persona

## Identity
- Name: Gatekeeper
- Role: ops

## Reporting
- Manager: U0MGR
- Backup manager: U0BACKUP

## Mandate
- Runs the ops queue.

## Trusted channels
- <#C0TEAM|team>
`

// rulesSoul has every list the gateway rules read.
const rulesSoul = gatekeeperSoul + `
## Allowed channels
- <#C0PUB>

## Approvers
- <@U0APP>: anything

## Blocked
- <@U0EVIL> ; spammer

## Redaction
- ` + "`" + `ACME-[0-9]{6}` + "`" + ` ; acme account number
`

// metric reads one series of /metrics ("name{labels}"); 0 when absent.
func (h *harness) metric(series string) float64 {
	h.t.Helper()
	_, body := h.getAt(h.metricsPort, "/metrics")
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				h.t.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

// waitMetric waits until series reaches want.
func (h *harness) waitMetric(series string, want float64) {
	h.t.Helper()
	var got float64
	if !fake.Eventually(10*time.Second, func() bool { got = h.metric(series); return got >= want }) {
		h.t.Fatalf("%s = %v, want %v\nlogs:\n%s", series, got, want, h.logs)
	}
	if got > want {
		h.t.Fatalf("%s = %v, want %v", series, got, want)
	}
}

func drops(reason string) string { return `agent_chat_drops_total{reason="` + reason + `"}` }

const notEngaged = `agent_pipeline_stage_total{outcome="drop",stage="engage"}`

// expectReply waits for a post in channel with thread ts containing text.
func (h *harness) expectReply(channel, thread, text string) fake.Post {
	h.t.Helper()
	p, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return p.Channel == channel && p.ThreadTS == thread && strings.Contains(p.Text, text)
	})
	if err != nil {
		h.t.Fatalf("no reply %q in %s/%s: %v\nposts: %+v\nlogs:\n%s", text, channel, thread, err, h.slack.Posts(), h.logs)
	}
	// Let the turn finish (its last model call comes after the reply), so
	// that counting model requests afterwards is exact.
	h.turns++
	h.waitMetric(`agent_turns_total{outcome="ok"}`, float64(h.turns))
	return p
}

func (h *harness) send(m fake.Message) string { return h.slack.SendEvent(m.Payload()) }

// heard is the last person's message of the request as the tests quote
// it, "<@U…> (role): words", from its envelope (the raw text when there is
// none).
func heard(req fake.AnthropicRequest) string {
	text := req.LastUserText()
	if id, role, words, ok := pipeline.ParseEnvelope(text); ok {
		return "<@" + id + "> (" + role + "): " + words
	}
	return text
}

// answerAll makes the model answer every turn with "ack: <n>".
func (h *harness) answerAll() {
	var n atomic.Int64 // turns of different threads ask at once
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		if last[len(last)-1].Type == "tool_result" {
			return fake.TextReply("")
		}
		return fake.ToolUse("toolu_"+strconv.FormatInt(n.Add(1), 10), "mcp__agent_chat__reply", map[string]string{"text": "ack: " + heard(req)})
	}
}

func TestEngagementAndLayers(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.EchoPosts = true
	h.answerAll()
	h.start()

	t.Run("rule 1/6: DM from the manager is answered", func(t *testing.T) {
		h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
		h.expectReply("D0MGR", "100.1", "status?")
	})
	t.Run("rule 6: DM from a member is dropped (dm)", func(t *testing.T) {
		before := len(h.model.Requests())
		h.send(fake.Message{User: "U0ALICE", Channel: "D0ALICE", TS: "101.1", Text: "hello"})
		h.waitMetric(drops("dm"), 1)
		if len(h.model.Requests()) != before {
			t.Fatal("a dropped DM reached the model")
		}
	})
	t.Run("rule 2: a mention in a trusted channel engages, reply in thread", func(t *testing.T) {
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "200.1", Text: "<@U0BOT> deploy?"})
		p := h.expectReply("C0TEAM", "200.1", "deploy?")
		if strings.Contains(p.Text, "U0BOT") {
			t.Errorf("the bot's mention reached the model: %q", p.Text)
		}
	})
	t.Run("rule 3: a plain reply in an engaged thread is handled", func(t *testing.T) {
		h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "200.2", ThreadTS: "200.1", Text: "and rollback?"})
		h.expectReply("C0TEAM", "200.1", "and rollback?")
	})
	t.Run("rule 4: mentioning another user disengages, and is not answered", func(t *testing.T) {
		before := len(h.model.Requests())
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "200.3", ThreadTS: "200.1", Text: "<@U0BOB> can you look?"})
		h.waitMetric(notEngaged, 1)
		h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "200.4", ThreadTS: "200.1", Text: "sure"})
		h.waitMetric(notEngaged, 2)
		if len(h.model.Requests()) != before {
			t.Fatal("a disengaged thread reached the model")
		}
		// A new mention engages it again.
		h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "200.5", ThreadTS: "200.1", Text: "<@U0BOT> back to you"})
		h.expectReply("C0TEAM", "200.1", "back to you")
	})
	t.Run("chatter at the top level of a channel is not engaged", func(t *testing.T) {
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "201.1", Text: "lunch?"})
		h.waitMetric(notEngaged, 3)
	})
	t.Run("allowed layer: members are answered", func(t *testing.T) {
		h.send(fake.Message{User: "U0BOB", Channel: "C0PUB", TS: "300.1", Text: "<@U0BOT> question"})
		h.expectReply("C0PUB", "300.1", "question")
	})
	t.Run("restricted layer: members dropped (whitelist), managers answered", func(t *testing.T) {
		before := len(h.model.Requests())
		h.send(fake.Message{User: "U0ALICE", Channel: "C0RANDOM", TS: "400.1", Text: "<@U0BOT> hi"})
		h.waitMetric(drops("whitelist"), 1)
		if len(h.model.Requests()) != before {
			t.Fatal("a whitelist drop reached the model")
		}
		h.send(fake.Message{User: "U0BACKUP", Channel: "C0RANDOM", TS: "400.2", Text: "<@U0BOT> backup here"})
		h.expectReply("C0RANDOM", "400.2", "backup here")
	})
	t.Run("blocked users are dropped (blocked)", func(t *testing.T) {
		before := len(h.model.Requests())
		h.send(fake.Message{User: "U0EVIL", Channel: "C0TEAM", TS: "500.1", Text: "<@U0BOT> hi"})
		h.waitMetric(drops("blocked"), 1)
		if len(h.model.Requests()) != before {
			t.Fatal("a blocked user reached the model")
		}
	})
	t.Run("the bot's own posts come back and are dropped (self)", func(t *testing.T) {
		// EchoPosts sent every reply above back as a bot message.
		if h.metric(drops("self")) < 1 {
			h.waitMetric(drops("self"), 1)
		}
	})
	t.Run("a mention arrives twice (app_mention + message) and is handled once", func(t *testing.T) {
		dupes := h.metric(drops("duplicate"))
		before := len(h.model.Requests())
		h.slack.SendEvent(fake.AppMention{User: "U0ALICE", Channel: "C0TEAM", TS: "600.1", Text: "<@U0BOT> twice"}.Payload())
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "600.1", Text: "<@U0BOT> twice"})
		h.expectReply("C0TEAM", "600.1", "twice")
		h.waitMetric(drops("duplicate"), dupes+1)
		if got := len(h.model.Requests()) - before; got != 2 { // one turn: tool call + end
			t.Fatalf("model requests for one mention = %d, want 2", got)
		}
	})
	t.Run("a redelivered event is dropped (duplicate)", func(t *testing.T) {
		dupes := h.metric(drops("duplicate"))
		payload := fake.Message{EventID: "EvREDELIVER", User: "U0MGR", Channel: "D0MGR", TS: "700.1", Text: "once"}.Payload()
		h.slack.Send("events_api", payload, 0)
		h.expectReply("D0MGR", "700.1", "once")
		before := len(h.model.Requests())
		h.slack.Send("events_api", payload, 1)
		h.waitMetric(drops("duplicate"), dupes+1)
		if len(h.model.Requests()) != before {
			t.Fatal("a redelivery reached the model")
		}
	})
}

func TestRedactionBothWays(t *testing.T) {
	h := newHarness(t, rulesSoul)
	secretReply := "here it is: " + fake.DefaultBotToken + " and ACME-123456"
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		if last := msgs[len(msgs)-1].Content; last[len(last)-1].Type == "tool_result" {
			return fake.TextReply("")
		}
		return fake.ToolUse("toolu_1", "mcp__agent_chat__reply", map[string]string{"text": secretReply})
	}
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1",
		Text: "my account ACME-654321 and key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA and " + h.env["LLM_API_KEY"]})
	p := h.expectReply("D0MGR", "100.1", "here it is")
	if strings.Contains(p.Text, fake.DefaultBotToken) || strings.Contains(p.Text, "ACME-123456") {
		t.Fatalf("a secret was posted: %q", p.Text)
	}
	if !strings.Contains(p.Text, "[redacted: acme account number]") {
		t.Fatalf("reply not redacted as expected: %q", p.Text)
	}
	for _, req := range h.model.Requests() {
		body := string(req.Body)
		for _, secret := range []string{"ACME-654321", "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA", h.env["LLM_API_KEY"], fake.DefaultBotToken} {
			if strings.Contains(body, secret) {
				t.Fatalf("a model request contains a redacted value %q", secret)
			}
		}
	}
	if !strings.Contains(string(h.model.Requests()[0].Messages), "[redacted: acme account number]") {
		t.Fatalf("inbound not redacted: %s", h.model.Requests()[0].Messages)
	}
}

func TestRestartKeepsEngagementAndDedupe(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.answerAll()
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "800.1", Text: "<@U0BOT> remember me"})
	h.expectReply("C0TEAM", "800.1", "remember me")
	redelivery := fake.Message{EventID: "EvBEFORE", User: "U0ALICE", Channel: "C0TEAM", TS: "800.2", ThreadTS: "800.1", Text: "first"}.Payload()
	h.slack.Send("events_api", redelivery, 0)
	h.expectReply("C0TEAM", "800.1", "first")
	// A thread that was disengaged stays so across the restart.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "900.1", Text: "<@U0BOT> other"})
	h.expectReply("C0TEAM", "900.1", "other")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "900.2", ThreadTS: "900.1", Text: "<@U0BOB> over to you"})
	h.waitMetric(notEngaged, 1)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	h.start()
	before := len(h.model.Requests())
	h.slack.Send("events_api", redelivery, 2)
	h.waitMetric(drops("duplicate"), 1)
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "900.3", ThreadTS: "900.1", Text: "still there?"})
	h.waitMetric(notEngaged, 1)
	if len(h.model.Requests()) != before {
		t.Fatal("a redelivery or a disengaged thread reached the model after the restart")
	}
	// The engaged thread is still engaged, and its history resumes.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "800.3", ThreadTS: "800.1", Text: "after restart"})
	h.expectReply("C0TEAM", "800.1", "after restart")
	last := h.model.Requests()[before]
	if !strings.Contains(string(last.Messages), "remember me") {
		t.Fatalf("history not resumed after restart: %s", last.Messages)
	}
}
