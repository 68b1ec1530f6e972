package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

const budgetSoul = testSoul + `
## Budgets
- Thread: 1k tokens
`

// used is a scripted model answer with the usage given (claude-test has
// no price: every kind counts one for one against a budget, cache reads a
// tenth).
func used(r fake.AnthropicResponse, in, out, cacheWrite, cacheRead int64) fake.AnthropicResponse {
	r.Usage = fake.AnthropicUsage{InputTokens: in, OutputTokens: out, CacheCreationInputTokens: cacheWrite, CacheReadInputTokens: cacheRead}
	return r
}

func sayTool(id, text string) fake.AnthropicResponse {
	return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": text})
}

// A thread's budget through the real service: at 79 % nothing is said; at
// 80 % the thread is told once; a turn that crosses the line finishes the
// reply it was writing and stops before its next model call, with the
// refusal line and the raise card; at 100 % the next message is refused
// before any model call; the manager's approval on the card raises the
// budget and the turn goes on. The tokens recorded equal the token
// metrics, and agent usage prints them.
func TestBudgetThreadEndToEnd(t *testing.T) {
	h := newHarness(t, budgetSoul)
	h.start()
	const ch, root = "D0MGR", "300.1"
	turn := func(ts, text string) {
		h.t.Helper()
		h.send(fake.Message{User: "U0MGR", Channel: ch, TS: ts, ThreadTS: root, Text: text})
	}

	// 780 + 10 = 790 tokens: 79 %.
	h.model.Enqueue(used(sayTool("t1", "one"), 700, 30, 40, 100), used(fake.TextReply(""), 0, 10, 0, 0))
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: root, Text: "first"})
	h.expectReply(ch, root, "one")
	// 790 → 800 during this turn: nothing said yet (checked before each call).
	h.model.Enqueue(used(sayTool("t2", "two"), 5, 0, 0, 0), used(fake.TextReply(""), 0, 5, 0, 0))
	turn("300.2", "second")
	h.expectReply(ch, root, "two")
	for _, p := range h.slack.Posts() {
		if strings.HasPrefix(p.Text, "budget") {
			t.Fatalf("told at 79 %%: %q", p.Text)
		}
	}
	// 800: told once, before the model is asked; 850 and 900 say nothing more.
	h.model.Enqueue(used(sayTool("t3", "three"), 50, 0, 0, 0), used(fake.TextReply(""), 0, 50, 0, 0))
	turn("300.3", "third")
	h.expectNotice(ch, root, "budget: 80 % of this thread's budget is used (800 of 1000 tokens)")
	h.expectReply(ch, root, "three")
	// Crossing mid-turn: the reply of the call that crossed is posted, no
	// further call is made.
	h.model.Enqueue(used(sayTool("t4", "four, partly"), 150, 0, 0, 0))
	turn("300.4", "fourth")
	h.expectNotice(ch, root, "four, partly")
	h.expectNotice(ch, root, "budget reached: thread (resets only when raised)")
	card := h.budgetCard(ch, root, 1)
	if n := len(h.model.Requests()); n != 7 {
		t.Fatalf("model requests = %d, want 7: the turn that crossed went on", n)
	}
	h.click("U0MGR", card, "deny")
	h.waitMetric(`agent_turns_total{outcome="budget"}`, 1)
	if n := countNotices(h, "budget: "); n != 1 {
		t.Errorf("80 %% notice posted %d times, want once", n)
	}

	// 100 %: refused before any model call.
	turn("300.5", "fifth")
	card = h.budgetCard(ch, root, 2)
	if n := len(h.model.Requests()); n != 7 {
		t.Fatalf("model requests = %d: a refused turn called the model", n)
	}
	if n := countNotices(h, "budget reached: thread"); n != 2 {
		t.Errorf("refusal lines = %d, want 2", n)
	}
	h.waitMetric(`agent_budget_exhausted_total{budget="thread"}`, 2)
	// The manager raises it from the card: the turn goes on.
	h.model.Enqueue(used(sayTool("t6", "raised, going on"), 10, 0, 0, 0), used(fake.TextReply(""), 0, 10, 0, 0))
	h.click("U0MGR", card, "approve")
	h.expectReply(ch, root, "raised, going on")

	// What was recorded is what the metrics counted.
	env := map[string]string{"AGENT_HOME": h.home, "HOME": h.home}
	out, errOut, code := runCLI(t, env, "usage", "--json", "--by", "thread")
	var rec usageRecord
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil {
		t.Fatalf("agent usage --json: exit %d %q %s", code, out, errOut)
	}
	for kind, got := range map[string]int64{"input": rec.Input, "output": rec.Output, "cache_write": rec.CacheWrite, "cache_read": rec.CacheRead} {
		if want := h.metric(`agent_model_tokens_total{kind="` + kind + `",model="claude-test"}`); float64(got) != want {
			t.Errorf("usage %s = %d, metrics say %v", kind, got, want)
		}
	}
	if rec.Key != ch+":"+root || rec.Tokens != 1070 || rec.Input != 915 || rec.CacheRead != 100 {
		t.Errorf("usage record = %+v", rec)
	}
	out, _, _ = runCLI(t, env, "usage")
	want := "CHANNEL  INPUT  OUTPUT  CACHE WRITE  CACHE READ  BUDGET TOKENS  COST (USD)\n" +
		"D0MGR    915    105     40           100         1070           0.0000\n" +
		"total    915    105     40           100         1070           0.0000\n"
	if out != want {
		t.Errorf("agent usage:\n%s\nwant:\n%s", out, want)
	}
}

// budgetCard waits for the nth approval card of category budget in the
// thread.
func (h *harness) budgetCard(channel, thread string, nth int) fake.Post {
	h.t.Helper()
	var card fake.Post
	ok := fake.Eventually(10*time.Second, func() bool {
		n := 0
		for _, p := range h.slack.Posts() {
			if p.Channel == channel && p.ThreadTS == thread && len(p.Blocks) > 0 && strings.Contains(p.Text, "Approval needed (budget)") {
				if n++; n == nth {
					card = p
					return true
				}
			}
		}
		return false
	})
	if !ok {
		h.t.Fatalf("no budget card %d: posts %+v\nlogs:\n%s", nth, h.slack.Posts(), h.logs)
	}
	return card
}

func countNotices(h *harness, prefix string) int {
	n := 0
	for _, p := range h.slack.Posts() {
		if strings.HasPrefix(p.Text, prefix) {
			n++
		}
	}
	return n
}

// AGENT_PRICES: a file that does not read stops the service and agent
// usage with its name and line.
func TestPricesFileErrors(t *testing.T) {
	h := newHarness(t, testSoul)
	path := filepath.Join(h.home, "prices.yaml")
	if err := os.WriteFile(path, []byte("claude-test:\n  input: 1\n  output: lots\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENT_HOME": h.home, "HOME": h.home, "AGENT_PRICES": path}
	_, errOut, code := runCLI(t, env, "usage")
	if code == 0 || !strings.Contains(errOut, "AGENT_PRICES: "+path+":3: model claude-test: output must be a number") {
		t.Errorf("agent usage with a bad AGENT_PRICES: exit %d, %q", code, errOut)
	}
	_, errOut, code = runCLI(t, map[string]string{"AGENT_HOME": h.home, "HOME": h.home}, "usage", "--by", "planet")
	if code == 0 || !strings.Contains(errOut, `--by: unknown grouping "planet"`) {
		t.Errorf("agent usage --by planet: exit %d, %q", code, errOut)
	}
}
