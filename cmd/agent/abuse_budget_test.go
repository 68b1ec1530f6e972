package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/persona-runtime/agent/internal/budget"
	"github.com/persona-runtime/agent/internal/fake"
)

// spendAll scripts the model: every turn answers through the reply tool
// and ends, each call using in input and out output tokens; a compaction
// call (its system prompt) answers a summary using compactIn input
// tokens.
func (h *harness) spendAll(in, out, compactIn int64) {
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		if strings.Contains(req.SystemText(), "You compress chat conversations") {
			return used(fake.TextReply("They discussed releases."), compactIn, 0, 0, 0)
		}
		if _, _, isResult := lastResult(req); isResult {
			return used(fake.TextReply(""), in, out, 0, 0)
		}
		return used(sayTool("toolu_spend"+strconv.FormatInt(spendIDs.Add(1), 10), "ack: "+heard(req)), in, out, 0, 0)
	}
}

// spendIDs numbers spendAll's tool calls: unique across its scripts.
var spendIDs atomic.Int64

// compactions counts the model calls that were compactions.
func compactions(h *harness) int {
	n := 0
	for _, r := range h.model.Requests() {
		if strings.Contains(r.SystemText(), "You compress chat conversations") {
			n++
		}
	}
	return n
}

// budgetCards are the raise cards posted anywhere.
func budgetCards(h *harness) []fake.Post {
	var out []fake.Post
	for _, p := range h.slack.Posts() {
		if len(p.Blocks) > 0 && strings.Contains(p.Text, "Approval needed (budget)") {
			out = append(out, p)
		}
	}
	return out
}

// One raise card per budget at a time: once the persona's day is spent,
// the first refused thread gets the card; every other thread refused
// while it waits is pointed to it (the pinned refusal line, then a link
// to the card), not given a card of its own. Approved, the persona's
// budget is raised for the day: the waiting turn goes on, and so does the
// next message of a thread that was pointed to the card.
func TestAbuseBudgetOneRaiseCard(t *testing.T) {
	h := newHarness(t, testSoul+"\n## Budgets\n- Persona: 1k tokens/day\n")
	h.spendAll(250, 250, 0)
	h.start()

	h.send(fake.Message{User: "U0ALICE", Channel: "D0ALICE", TS: "100.1", Text: "spend it"})
	h.expectReply("D0ALICE", "100.1", "spend it")

	// The day is spent: the first refusal asks the card and waits.
	h.send(fake.Message{User: "U0ALICE", Channel: "D0ALICE", TS: "110.1", Text: "more"})
	h.expectNotice("D0ALICE", "110.1", "budget reached: persona (resets ")
	card := h.budgetCard("D0ALICE", "110.1", 1)
	requests := len(h.model.Requests())
	h.spendAll(1, 1, 0) // what follows the raise costs little

	// Two other people's threads: pointed to the card, no card of their own.
	link := "https://slack.com/archives/D0ALICE/p" + strings.ReplaceAll(card.TS, ".", "")
	for _, who := range []struct{ user, channel, ts string }{{"U0BOB", "D0BOB", "200.1"}, {"U0CAROL", "D0CAROL", "300.1"}} {
		h.send(fake.Message{User: who.user, Channel: who.channel, TS: who.ts, Text: "my turn?"})
		p := h.expectNotice(who.channel, who.ts, "budget reached: persona (resets ")
		if !strings.HasPrefix(p.Text, "budget reached: persona (resets ") || !strings.Contains(p.Text, "; a raise is already asked: ") ||
			!strings.Contains(p.Text, link) {
			t.Errorf("%s's refusal = %q, want the pinned line pointing to the card (%s)", who.user, p.Text, link)
		}
	}
	h.waitMetric(`agent_budget_exhausted_total{budget="persona"}`, 3)
	if cards := budgetCards(h); len(cards) != 1 {
		t.Fatalf("raise cards = %d, want 1: %+v", len(cards), cards)
	}
	if n := len(h.model.Requests()); n != requests {
		t.Fatalf("the refused threads called the model (%d requests, want %d)", n, requests)
	}

	// Approved: the persona's day is raised; the waiting turn goes on, and
	// a thread that was pointed to the card is answered when asked again.
	h.click("U0MGR", card, "approve")
	h.expectReply("D0ALICE", "110.1", "more")
	h.send(fake.Message{User: "U0BOB", Channel: "D0BOB", TS: "200.2", ThreadTS: "200.1", Text: "now?"})
	h.expectReply("D0BOB", "200.1", "now?")
	if cards := budgetCards(h); len(cards) != 1 {
		t.Errorf("raise cards = %d after the raise, want 1", len(cards))
	}
}

// A budget that cannot be read (the store refuses the usage's reads)
// refuses the turn before the model is asked and tells the thread; once
// the store reads again, the thread is answered.
func TestAbuseBudgetFailsClosed(t *testing.T) {
	h := newHarness(t, testSoul+"\n## Budgets\n- Persona: 1M tokens/day\n")
	h.answerAll()
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "first"})
	h.expectReply("D0MGR", "100.1", "first")

	db := h.openDB()
	mustExec(t, db, "ALTER TABLE model_usage RENAME TO model_usage_away")
	requests := len(h.model.Requests())
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "second"})
	h.expectNotice("D0MGR", "100.1", budget.CheckFailedText)
	h.waitMetric(`agent_turns_total{outcome="budget"}`, 1)
	if n := len(h.model.Requests()); n != requests {
		t.Fatalf("the model was asked with the budget unreadable (%d requests, want %d)", n, requests)
	}
	h.waitLog("budget check failed: turn refused")

	mustExec(t, db, "ALTER TABLE model_usage_away RENAME TO model_usage")
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.3", ThreadTS: "100.1", Text: "third"})
	h.expectReply("D0MGR", "100.1", "third")
}

// /compact is a model call like a turn's: typed in a thread, only its
// starter, the manager, the backup manager or an approver may run it; its
// tokens are recorded (agent usage and the budgets count them), and a
// spent budget refuses it before the model is asked.
func TestAbuseCompactNeedsRoleAndBudget(t *testing.T) {
	h := newHarness(t, rulesSoul+"\n## Budgets\n- Persona: 1k tokens/day\n")
	h.spendAll(25, 25, 500) // 100 tokens a turn; a compaction 500
	h.start()
	for _, root := range []string{"100.1", "200.1"} {
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: root, Text: "<@U0BOT> release one"})
		h.expectReply("C0TEAM", root, "release one")
		for i, text := range []string{"release two", "release three"} {
			h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: root + strconv.Itoa(i+2), ThreadTS: root, Text: text})
			h.expectReply("C0TEAM", root, text)
		}
	}
	// 600 tokens spent. Bob did not start the thread and has no role.
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "100.8", ThreadTS: "100.1", ParentUserID: "U0ALICE", Text: "/compact"})
	h.expectNotice("C0TEAM", "100.1", "unauthorized: only the person who started this thread, the manager, the backup manager or an approver can compact it.")
	if n := compactions(h); n != 0 {
		t.Fatalf("Bob's /compact compacted (%d calls)", n)
	}

	// Alice started it: compacted, its 500 tokens recorded.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "100.9", ThreadTS: "100.1", Text: "/compact"})
	h.expectNotice("C0TEAM", "100.1", "Compacted: 3 older messages")
	env := map[string]string{"AGENT_HOME": h.home, "HOME": h.home, "AGENT_MODEL": "claude-test"}
	out, errOut, code := runCLI(t, env, "usage", "--json", "--by", "thread")
	var recs []usageRecord
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r usageRecord
		if json.Unmarshal([]byte(line), &r) == nil {
			recs = append(recs, r)
		}
	}
	if code != 0 || len(recs) != 2 {
		t.Fatalf("agent usage --json: exit %d %q %s", code, out, errOut)
	}
	for _, r := range recs {
		if want := map[string]int64{"C0TEAM:100.1": 800, "C0TEAM:200.1": 300}[r.Key]; r.Tokens != want {
			t.Errorf("usage of %s = %d tokens, want %d (the compaction counted in its thread)", r.Key, r.Tokens, want)
		}
	}

	// 1,100 of 1,000: the other thread's /compact is refused before the
	// model is asked, told as a turn would be.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "200.9", ThreadTS: "200.1", Text: "/compact"})
	h.expectNotice("C0TEAM", "200.1", "budget reached: persona (resets ")
	card := h.budgetCard("C0TEAM", "200.1", 1)
	h.click("U0MGR", card, "deny")
	h.waitMetric(`agent_budget_exhausted_total{budget="persona"}`, 1)
	if n := compactions(h); n != 1 {
		t.Fatalf("compactions = %d, want 1: the spent budget did not stop /compact", n)
	}
	for _, p := range postsIn(h, "C0TEAM", "200.1") {
		if strings.HasPrefix(p, "Compacted") {
			t.Errorf("the refused /compact says %q", p)
		}
	}
}

// A person's daily budget: the tokens of the turns one person sent count
// in every thread; past the line that person's next turn is refused
// ("budget reached: person"), while others are answered.
func TestAbuseBudgetPerPerson(t *testing.T) {
	soul := testSoul + "\n## Budgets\n- Person: 1k/day\n- Persona: 1M tokens/day\n"
	h := newHarness(t, soul)
	h.spendAll(250, 250, 0)
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "D0ALICE", TS: "100.1", Text: "spend mine"})
	h.expectReply("D0ALICE", "100.1", "spend mine")

	requests := len(h.model.Requests())
	h.send(fake.Message{User: "U0ALICE", Channel: "D0ALICE", TS: "110.1", Text: "a new thread"})
	p := h.expectNotice("D0ALICE", "110.1", "budget reached: ")
	if !strings.HasPrefix(p.Text, "budget reached: person (resets ") {
		t.Errorf("refusal = %q, want the person's", p.Text)
	}
	h.budgetCard("D0ALICE", "110.1", 1)
	if n := len(h.model.Requests()); n != requests {
		t.Fatalf("Alice's spent day still called the model (%d requests, want %d)", n, requests)
	}
	h.send(fake.Message{User: "U0BOB", Channel: "D0BOB", TS: "200.1", Text: "and me?"})
	h.expectReply("D0BOB", "200.1", "and me?")
	h.waitMetric(`agent_budget_exhausted_total{budget="person"}`, 1)

	// validate-soul shows it.
	path := filepath.Join(h.home, "SOUL.md")
	out, errs, code := runCLI(t, map[string]string{"HOME": h.home}, "validate-soul", "--soul", path)
	if code != 0 || !strings.Contains(out, "person 1000 tokens/day") {
		t.Errorf("validate-soul: exit %d %q %s", code, out, errs)
	}
	if err := os.WriteFile(path, []byte(testSoul+"\n## Budgets\n- Person: lots\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, _ = runCLI(t, map[string]string{"HOME": h.home}, "validate-soul", "--soul", path)
	if !strings.Contains(out+errs, `budget "Person: lots" ignored: want "Person: <N>/day"`) {
		t.Errorf("validate-soul on a bad person line: %q %q", out, errs)
	}
}

// With AGENT_MODELS offering a pricier model, a thread on it counts its
// tokens times that model's price over the default model's: 160 tokens of
// a model five times the price are 800 of a 1,000-token budget, and the
// notice says the budget counts in the default model's tokens.
func TestAbuseBudgetModelPriceWeighted(t *testing.T) {
	h := newHarness(t, testSoul+"\n## Budgets\n- Thread: 1k tokens\n")
	prices := filepath.Join(h.home, "prices.yaml")
	if err := os.WriteFile(prices, []byte("claude-test:\n  input: 1\n  output: 5\n  cache_write: 1.25\n  cache_read: 0.1\n"+
		"claude-big:\n  input: 5\n  output: 25\n  cache_write: 6.25\n  cache_read: 0.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.env["AGENT_PRICES"] = prices
	h.env["AGENT_MODELS"] = "claude-test,claude-big"
	h.spendAll(80, 0, 0) // a turn is two calls: 160 input tokens
	h.start()
	const ch = "D0MGR"
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "100.1", Text: "/model claude-big"})
	h.expectNotice(ch, "100.1", "Model of this thread: `claude-big`")
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "100.3", ThreadTS: "100.1", Text: "think hard"})
	h.expectReply(ch, "100.1", "think hard")
	// The same on the default model, in another thread: 160 tokens.
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "200.1", Text: "think lightly"})
	h.expectReply(ch, "200.1", "think lightly")

	h.spendAll(1, 0, 0) // what follows costs little
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "100.4", ThreadTS: "100.1", Text: "again"})
	h.expectNotice(ch, "100.1", "budget: 80 % of this thread's budget is used (800 of 1000 tokens); tokens weighted by model price, in claude-test tokens")
	h.expectReply(ch, "100.1", "again")
	h.send(fake.Message{User: "U0MGR", Channel: ch, TS: "200.2", ThreadTS: "200.1", Text: "again"})
	h.expectReply(ch, "200.1", "again")
	for _, p := range postsIn(h, ch, "200.1") {
		if strings.HasPrefix(p, "budget") {
			t.Errorf("the default model's thread was told %q at 162 tokens", p)
		}
	}
}
