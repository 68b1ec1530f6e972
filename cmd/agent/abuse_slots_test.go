package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// parkedThreads is how many threads wait on a card at once in the slot
// abuse case: more than twice the default AGENT_MAX_TURNS (8).
const parkedThreads = 20

var parkRe = regexp.MustCompile(`park (\d+)`)

// scriptParked makes the model answer "park N" with an approval request,
// then reply "done N: <outcome>"; any other message is answered "hi there".
func (h *harness) scriptParked() {
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		res, _, isResult := lastResult(req)
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		switch id := last[len(last)-1].ToolUseID; {
		case isResult && strings.HasPrefix(id, "toolu_ask_"):
			n := strings.TrimPrefix(id, "toolu_ask_")
			return fake.ToolUse("toolu_done_"+n, "mcp__agent_chat__reply", map[string]string{"text": "done " + n + ": " + res})
		case isResult:
			return fake.TextReply("")
		}
		if m := parkRe.FindStringSubmatch(req.LastUserText()); m != nil {
			return fake.ToolUse("toolu_ask_"+m[1], "mcp__agent_chat__request_approval",
				map[string]string{"category": "deploy", "summary": "deploy " + m[1]})
		}
		return fake.ToolUse("toolu_hi_"+req.LastUserText(), "mcp__agent_chat__reply", map[string]string{"text": "hi there"})
	}
}

// parkRoot is the root ts of the n-th parked thread.
func parkRoot(n int) string { return fmt.Sprintf("%d.000100", 5000+n) }

// park starts n threads and waits until each is parked on its card; it
// returns the cards in thread order.
func (h *harness) park(ctx context.Context, n int) []fake.Post {
	h.t.Helper()
	for i := range n {
		h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: parkRoot(i), Text: fmt.Sprintf("park %d", i)})
	}
	var cards []fake.Post
	for i := range n {
		card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return p.ThreadTS == parkRoot(i) && len(p.Blocks) > 0 })
		if err != nil {
			posted := 0
			for _, p := range h.slack.Posts() {
				if len(p.Blocks) > 0 {
					posted++
				}
			}
			h.t.Fatalf("%d of %d threads parked on a card: the waiting turns hold every slot (%v)", posted, n, err)
		}
		cards = append(cards, card)
	}
	return cards
}

// Twenty turns waiting on approval cards, more than AGENT_MAX_TURNS (the
// default, 8): every one posts its card, a new DM is answered meanwhile,
// and once the cards are approved all twenty finish.
func TestAbuseParkedCardsDoNotFreezeThePersona(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.scriptParked()
	h.start()
	// Generous: on a loaded machine twenty turns take a while; nothing is
	// asserted about how long.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	cards := h.park(ctx, parkedThreads)

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "6000.000100", Text: "hello"})
	if _, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return p.ThreadTS == "6000.000100" && p.Text == "hi there" }); err != nil {
		t.Fatalf("a DM beside %d parked cards was not answered: %v", parkedThreads, err)
	}

	// The manager decides: the cards are in the manager's DM.
	for _, card := range cards {
		h.click("U0MGR", card, "approve")
	}
	for i := range parkedThreads {
		want := fmt.Sprintf("done %d: approved by <@U0MGR>", i)
		if _, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return p.ThreadTS == parkRoot(i) && p.Text == want }); err != nil {
			t.Fatalf("parked thread %d did not finish after its approval: %v", i, err)
		}
	}
}

// BenchmarkDMBesideParkedCards is a DM in a new thread, answered at once
// by the model, with none or twenty other turns parked on approval cards:
// the waiting turns hold no slot, so the two figures should match.
func BenchmarkDMBesideParkedCards(b *testing.B) {
	for _, parked := range []int{0, parkedThreads} {
		b.Run(fmt.Sprintf("parked=%d", parked), func(b *testing.B) {
			h := newHarness(b, rulesSoul)
			h.env["AGENT_LOG_LEVEL"] = "warn"
			h.scriptParked()
			h.start()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			h.park(ctx, parked)
			var total time.Duration
			for i := 0; b.Loop(); i++ {
				root := fmt.Sprintf("%d.000100", 7000+i)
				sent := time.Now()
				h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: root, Text: "hello"})
				p, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return p.ThreadTS == root && p.Text == "hi there" })
				if err != nil {
					b.Fatal(err)
				}
				total += p.At.Sub(sent)
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-to-reply")
		})
	}
}
