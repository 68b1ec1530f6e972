package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// Tool names (interfaces.md, "Memory").
const (
	ToolRemember = tools.MemoryRemember
	ToolRecall   = tools.MemoryRecall
	ToolForget   = tools.MemoryForget
)

// Tools are the model's memory tools, acting for the turn in their
// context (tools.TurnFromContext): its conversation, its sender.
func (m *Memories) Tools() []tools.Tool {
	return []tools.Tool{
		{
			Name: ToolRemember,
			Description: "Remember a short fact or decision across threads (at most 2000 characters). " +
				"scope conversation (default): recalled only in this channel or DM; persona: everywhere, in the manager's turns only, " +
				"and only once the manager approves the card it asks (the call waits for the decision).",
			Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to remember"},` +
				`"scope":{"type":"string","enum":["conversation","persona"]}},"required":["text"],"additionalProperties":false}`),
			Call: m.rememberTool,
		},
		{
			Name: ToolRecall,
			Description: "Search the memories and past threads of this conversation (and the persona-wide memories) " +
				"by words; results best first, with their thread, author and date.",
			Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":20}},"required":["query"],"additionalProperties":false}`),
			Call: m.recallTool,
		},
		{
			Name:        ToolForget,
			Description: "Forget a memory by its id (the manager, the backup manager or the memory's author).",
			Schema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},` +
				`"required":["id"],"additionalProperties":false}`),
			Call: m.forgetTool,
		},
	}
}

// turnWho is the turn's conversation and sender, or a refusal.
func turnWho(ctx context.Context) (who Who, channel, threadTS string, refused *tools.Result) {
	t, who, refused := turn(ctx)
	if refused != nil {
		return Who{}, "", "", refused
	}
	return who, t.Event.ChannelID, t.Event.RootTS(), nil
}

// turn is the turn in ctx and its sender, or a refusal.
func turn(ctx context.Context) (*pipeline.Turn, Who, *tools.Result) {
	t, ok := tools.TurnFromContext(ctx)
	if !ok || t.Event == nil || t.Event.ChannelID == "" {
		r := tools.Errorf("no chat conversation to remember in")
		return nil, Who{}, &r
	}
	who := Who{UserID: t.Event.UserID, Role: t.Access.Role}
	if t.Event.BotID != "" {
		who.Role = "" // a bot's message speaks for no person's role
	}
	return t, who, nil
}

func decodeInput(input json.RawMessage, v any) *tools.Result {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if err := json.Unmarshal(input, v); err != nil {
		r := tools.Errorf("invalid input: %v", err)
		return &r
	}
	return nil
}

// said turns a Refusal into the model's is_error result; other errors
// are the runtime's.
func said(err error) (tools.Result, error) {
	var r Refusal
	if errors.As(err, &r) {
		return tools.Errorf("%s", string(r)), nil
	}
	return tools.Result{}, err
}

func (m *Memories) rememberTool(ctx context.Context, input json.RawMessage) (tools.Result, error) {
	var in struct {
		Text  string `json:"text"`
		Scope string `json:"scope"`
	}
	if r := decodeInput(input, &in); r != nil {
		return *r, nil
	}
	t, who, refused := turn(ctx)
	if refused != nil {
		return *refused, nil
	}
	mem, decided, err := m.rememberAsked(ctx, t, who, in.Text, in.Scope)
	if err != nil {
		return said(err)
	}
	where := "in this conversation"
	if mem.Scope == ScopePersona {
		where = "everywhere, " + decided
	}
	return tools.Result{Text: fmt.Sprintf("remembered as %s (recalled %s)", mem.ID, where)}, nil
}

func (m *Memories) recallTool(ctx context.Context, input json.RawMessage) (tools.Result, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if r := decodeInput(input, &in); r != nil {
		return *r, nil
	}
	_, channel, ts, refused := turnWho(ctx)
	if refused != nil {
		return *refused, nil
	}
	rs, err := m.Recall(ctx, channel, ts, in.Query, min(max(in.Limit, 0), 20))
	if err != nil {
		return tools.Result{}, err
	}
	text := RecallText(rs, channel, m.roleOf)
	if m.Redact != nil {
		text = m.Redact(text)
	}
	return tools.Result{Text: text}, nil
}

func (m *Memories) forgetTool(ctx context.Context, input json.RawMessage) (tools.Result, error) {
	var in struct {
		ID string `json:"id"`
	}
	if r := decodeInput(input, &in); r != nil {
		return *r, nil
	}
	who, channel, _, refused := turnWho(ctx)
	if refused != nil {
		return *refused, nil
	}
	if err := m.Forget(ctx, who, channel, in.ID); err != nil {
		return said(err)
	}
	return tools.Result{Text: "forgot memory " + strings.TrimSpace(in.ID)}, nil
}
