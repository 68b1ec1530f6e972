package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/service"
)

// priceTestModel prices claude-test at a dollar per million input tokens
// (AGENT_PRICES), so that the scripted calls' spend is round.
func priceTestModel(h *harness) {
	h.t.Helper()
	prices := filepath.Join(h.home, "prices.yaml")
	if err := os.WriteFile(prices, []byte("claude-test:\n  input: 1\n  output: 5\n  cache_write: 1.25\n  cache_read: 0.1\n"), 0o600); err != nil {
		h.t.Fatal(err)
	}
	h.env["AGENT_PRICES"] = prices
}

// A channel's dollar cap through the real service, on its clock and in
// AGENT_TZ: each call costs $1; the thread is told at 80 % in dollars,
// the turn that crosses $5 stops before its next call with the refusal
// and the raise card in dollars, agent usage shows the spend against the
// cap, and after midnight in New York (not in UTC) the channel is
// answered again.
func TestBudgetChannelDollarsEndToEnd(t *testing.T) {
	h := newHarness(t, testSoul+"\n## Budgets\n- Channel: $5/day\n")
	priceTestModel(h)
	h.env["AGENT_TZ"] = "America/New_York"
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 15:00 in New York, today (so that agent usage's --since sees it).
	y, m, d := time.Now().In(ny).Date()
	clk := fake.NewClock(time.Date(y, m, d, 15, 0, 0, 0, ny))
	h.deps = func(d *service.Deps) { d.Clock = clk }
	h.spendAll(1_000_000, 0, 0) // a turn is two calls: $2
	h.start()
	const ch = "D0MGR"
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "100.1", Text: "one"})
	h.expectReply(ch, "100.1", "one")
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "100.2", ThreadTS: "100.1", Text: "two"})
	h.expectReply(ch, "100.1", "two")
	// $4 of $5: told, then the turn's first call crosses the cap.
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "100.3", ThreadTS: "100.1", Text: "three"})
	h.expectNotice(ch, "100.1", "budget: 80 % of this channel's budget for today is used ($4.00 of $5.00)")
	h.expectNotice(ch, "100.1", "ack: <@U0MGR> (manager): three")
	h.expectNotice(ch, "100.1", "budget reached: channel $5.00/day (resets "+time.Date(y, m, d+1, 0, 0, 0, 0, ny).Format("2006-01-02")+" 00:00 America/New_York)")
	card := h.budgetCard(ch, "100.1", 1)
	if !strings.Contains(card.Text+blocksText(card), "by $5.00? It has used $5.00 of $5.00") {
		t.Errorf("card: %q %s", card.Text, blocksText(card))
	}
	h.click("U0MGR", card, "deny")
	h.waitMetric(`agent_budget_exhausted_total{budget="channel_usd"}`, 1)
	requests := turnRequests(h)
	if requests != 5 {
		t.Fatalf("model requests = %d, want 5", requests)
	}

	out, errs, code := h.runCLI("usage")
	if code != 0 || !strings.Contains(out, "budgets today (America/New_York):\n  channel <#D0MGR>: $5.00 of $5.00 today\n") {
		t.Errorf("agent usage: exit %d\n%s%s", code, out, errs)
	}

	// 23:59 in New York (04:59 UTC the next day): still today.
	clk.Set(time.Date(y, m, d, 23, 59, 0, 0, ny))
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "200.1", Text: "late"})
	h.expectNotice(ch, "200.1", "budget reached: channel $5.00/day")
	if n := turnRequests(h); n != requests {
		t.Fatalf("refused turn called the model: %d requests", n)
	}
	clk.Set(time.Date(y, m, d+1, 0, 1, 0, 0, ny))
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "300.1", Text: "a new day"})
	h.expectReply(ch, "300.1", "a new day")
}

// turnRequests counts the model requests of turns: not the compactions
// of idle threads that moving the clock brings.
func turnRequests(h *harness) int {
	n := 0
	for _, r := range h.model.Requests() {
		if !strings.Contains(r.SystemText(), "You compress chat conversations") {
			n++
		}
	}
	return n
}

// blocksText is a post's blocks as JSON text, for a look at a card.
func blocksText(p fake.Post) string { return string(p.Blocks) }

// A schedule's per-run cap through the real service: a run whose calls
// cost $0.60 each stops before its third call, and says so in its target
// thread; the model is not asked again for that run.
func TestBudgetScheduleRunCapEndToEnd(t *testing.T) {
	h := newHarness(t, scheduleSoul+"\n## Budgets\n- Schedule: $1/run\n")
	priceTestModel(h)
	calls := 0
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		calls++
		return used(sayTool("toolu_run"+strconv.Itoa(calls), "working, step "+strconv.Itoa(calls)), 600_000, 0, 0, 0)
	}
	h.addDueSchedule("U0MGR", "D0MGR", "310.1", schedule.TargetThread, "check the build")
	h.start()
	h.expectNotice("D0MGR", "310.1", "budget reached: schedule $1.00/run (resets at the next run): this run stopped at $1.20")
	h.waitMetric(`agent_budget_exhausted_total{budget="schedule_usd"}`, 1)
	if n := len(h.model.Requests()); n != 2 {
		t.Fatalf("model requests = %d, want 2: the run went past its cap", n)
	}
	for _, p := range postsIn(h, "D0MGR", "310.1") {
		if strings.Contains(p, "step 3") {
			t.Errorf("a third step was posted: %q", p)
		}
	}
}
