package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// slotWait bounds each wait of the slot tests: a hang fails the test;
// nothing is asserted about how long anything takes.
const slotWait = 10 * time.Second

// cardChat is the approval gate's chat platform: it sends the id of each
// card posted on ids.
type cardChat struct {
	ids chan string
	n   atomic.Int64
}

func (c *cardChat) Post(_ context.Context, m pipeline.Message) (string, error) {
	if m.Card != nil {
		c.ids <- m.Card.ID
	}
	return fmt.Sprintf("900.%d", c.n.Add(1)), nil
}
func (c *cardChat) Update(context.Context, string, pipeline.Message) error { return nil }
func (c *cardChat) PostEphemeral(context.Context, string, string, string, string) error {
	return nil
}

// Upload serves a card whose call is too long to show (none here).
func (c *cardChat) Upload(context.Context, pipeline.Upload) error { return nil }

// approveAll lets anyone decide anything, with no timeout.
type approveAll struct{}

func (approveAll) CanApprove(string, string) bool { return true }
func (approveAll) ApprovalTimeout() time.Duration { return 0 }

// gated is an env whose tool calls (all but the chat's) ask for a card
// through the real approval gate, on the env's store.
type gated struct {
	*env
	gate  *approval.Gate
	cards *cardChat
}

func newGated(t *testing.T, maxTurns int) *gated {
	t.Helper()
	g := &gated{cards: &cardChat{ids: make(chan string, 32)}}
	var n atomic.Int64
	g.env = newEnv(t, config{maxTurns: maxTurns, extra: []tools.Tool{lookupTool()}, gate: func(st *store.Store) agent.Gate {
		gate, err := approval.New(approval.Options{Store: st, Chat: g.cards, Approvers: approveAll{},
			NewID: func() string { return fmt.Sprintf("ap%d", n.Add(1)) }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(gate.Close)
		g.gate = gate
		return &approval.ToolGate{Gate: gate}
	}})
	// "park" calls lookup (a card), then replies with its result; "hold"
	// is answered once release is closed; anything else is answered.
	g.fake.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		switch b := last[len(last)-1]; {
		case b.Type == "tool_result" && b.ToolUseID == "toolu_park":
			return reply("looked up: " + b.ResultText())
		case b.Type == "tool_result":
			return fake.TextReply("")
		case strings.Contains(req.LastUserText(), "park"):
			return fake.ToolUse("toolu_park", "lookup", map[string]any{})
		}
		return reply("hello")
	}
	return g
}

// card waits for the next card and returns its approval id.
func (g *gated) card(t *testing.T, what string) string {
	t.Helper()
	select {
	case id := <-g.cards.ids:
		return id
	case <-time.After(slotWait):
		t.Fatalf("no card posted: %s", what)
	}
	return ""
}

func (g *gated) approve(t *testing.T, id string) {
	t.Helper()
	ev := &pipeline.Event{Kind: pipeline.KindAction, ChannelID: "C1", UserID: "U0APP",
		Action: &pipeline.Action{ActionID: pipeline.ActionApprove, Value: id}}
	if err := g.gate.Click(t.Context(), ev, pipeline.Access{UserID: "U0APP"}); err != nil {
		t.Fatal(err)
	}
}

func turnResult(t *testing.T, errs <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(slotWait):
		t.Fatalf("%s: the turn did not end", what)
	}
	return nil
}

// With one slot, turns parked on cards give it back: three of them leave
// a new thread answered, and each goes on, in a slot again, once its card
// is approved.
func TestParkedTurnsGiveTheirSlotBack(t *testing.T) {
	g := newGated(t, 1)
	const parked = 3
	errs := make(chan error, parked)
	var outs []*fake.Outbox
	for i := range parked {
		turn, out := g.turn(t, fmt.Sprintf("%d.0", i+1), "park", pipeline.RoleMember)
		outs = append(outs, out)
		go func() { errs <- g.engine.Turn(t.Context(), turn) }()
	}
	var ids []string
	for i := range parked {
		ids = append(ids, g.card(t, fmt.Sprintf("%d of %d turns parked on a card; the others wait for the slot", i, parked)))
	}

	ctx, cancel := context.WithTimeout(t.Context(), slotWait)
	defer cancel()
	dm, out := g.turn(t, "9.0", "hi", pipeline.RoleMember)
	if err := g.engine.Turn(ctx, dm); err != nil {
		t.Fatalf("a new thread beside %d parked turns: %v", parked, err)
	}
	if got := out.Posts(); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("the new thread's posts = %q", got)
	}

	for _, id := range ids {
		g.approve(t, id)
	}
	for i := range parked {
		if err := turnResult(t, errs, fmt.Sprintf("parked turn %d", i)); err != nil {
			t.Errorf("parked turn: %v", err)
		}
	}
	for i, o := range outs {
		if got := o.Posts(); len(got) != 1 || got[0] != "looked up: 42" {
			t.Errorf("parked turn %d posted %q", i, got)
		}
	}
}

// A decided turn waiting for a slot again is still stopped by /abort, and
// leaves the slots as they were.
func TestAbortWhileRetakingTheSlot(t *testing.T) {
	g := newGated(t, 1)
	hold := make(chan struct{})
	respond := g.fake.Respond
	g.fake.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		r := respond(req)
		if strings.Contains(req.LastUserText(), "hold") {
			r.Gate = hold
		}
		return r
	}
	parked, _ := g.turn(t, "1.0", "park", pipeline.RoleMember)
	parkedErr := make(chan error, 1)
	go func() { parkedErr <- g.engine.Turn(t.Context(), parked) }()
	id := g.card(t, "the turn to abort")

	// A second thread takes the free slot and keeps it (its model call is
	// held).
	holding, _ := g.turn(t, "2.0", "hold", pipeline.RoleMember)
	holdErr := make(chan error, 1)
	go func() { holdErr <- g.engine.Turn(t.Context(), holding) }()
	ctx, cancel := context.WithTimeout(t.Context(), slotWait)
	defer cancel()
	if err := g.fake.WaitRequests(ctx, 2); err != nil {
		close(hold)
		t.Fatalf("the second thread never reached the model beside the parked turn: %v", err)
	}

	// Decided, the parked turn waits for the slot; /abort ends it there.
	g.approve(t, id)
	if !g.engine.Abort(parked.Event.ThreadKey()) {
		t.Error("Abort found no running turn in the parked thread")
	}
	if err := turnResult(t, parkedErr, "aborted while waiting for a slot"); !errors.Is(err, context.Canceled) {
		t.Errorf("aborted turn = %v, want context.Canceled", err)
	}
	close(hold)
	if err := turnResult(t, holdErr, "the holding turn"); err != nil {
		t.Errorf("holding turn: %v", err)
	}
	// Nothing leaked: the one slot serves the next turn.
	next, out := g.turn(t, "3.0", "hi", pipeline.RoleMember)
	if err := g.engine.Turn(ctx, next); err != nil || len(out.Posts()) != 1 {
		t.Fatalf("next turn: %v, posts %q", err, out.Posts())
	}
	for _, r := range g.fake.Requests() {
		if rawFirstUserText(r) != "" && strings.HasSuffix(rawFirstUserText(r), "park") && len(r.ParsedMessages()) > 1 {
			t.Errorf("the aborted turn called the model again after its card")
		}
	}
}
