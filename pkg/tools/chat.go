package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Names of the agent_chat tools (interfaces.md).
const (
	ChatReply           = "mcp__agent_chat__reply"
	ChatEdit            = "mcp__agent_chat__edit"
	ChatUpload          = "mcp__agent_chat__upload"
	ChatRequestApproval = "mcp__agent_chat__request_approval"
)

// Redactor scrubs secrets from text the agent posts.
type Redactor interface {
	Redact(text string) string
}

// Approvals asks people in the thread for a decision.
type Approvals interface {
	// RequestApproval posts a card and waits; it returns the outcome as
	// text ("approved by <@U…>", "denied by <@U…>", "timed out: …").
	RequestApproval(ctx context.Context, t *pipeline.Turn, category, summary, details string) (string, error)
}

// ChatServer is the agent_chat tool server: the agent's voice. Its tools
// are never gated.
type ChatServer struct {
	Redactor  Redactor
	Approvals Approvals
	// Replied is called after every successful reply (the stop guard
	// counts them).
	Replied func(ctx context.Context)
}

// Tools returns the tools of the server.
func (c *ChatServer) Tools() []Tool {
	return []Tool{
		{
			Name:        ChatReply,
			Description: "Post a reply in the current chat thread. This is the only way anyone sees what you say. Write markdown; it is converted to the chat's format. Returns the ts of the posted message.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The reply, in markdown."}},"required":["text"],"additionalProperties":false}`),
			Call:        c.reply,
		},
		{
			Name:        ChatEdit,
			Description: "Replace the text of a message you posted earlier in this thread (by the ts that reply returned).",
			Schema:      json.RawMessage(`{"type":"object","properties":{"ts":{"type":"string","description":"The ts of your message."},"text":{"type":"string","description":"The new text, in markdown."}},"required":["ts","text"],"additionalProperties":false}`),
			Call:        c.edit,
		},
		{
			Name: ChatRequestApproval,
			Description: "Ask the people of this thread for a decision before consequential work (deploys, deletions, publishing, spending, messages outside the thread). " +
				"Posts an approval card and waits for an authorised approver's click; returns approved, denied or timed out, and by whom. Respect a denial.",
			Schema: json.RawMessage(`{"type":"object","properties":{"category":{"type":"string","description":"What kind of decision this is (e.g. deploy, skills, spend); approvers are authorised per category."},"summary":{"type":"string","description":"One line saying exactly what will be done."},"details":{"type":"string","description":"Optional details."}},"required":["category","summary"],"additionalProperties":false}`),
			Call:   c.requestApproval,
		},
	}
}

func (c *ChatServer) requestApproval(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Category string `json:"category"`
		Summary  string `json:"summary"`
		Details  string `json:"details"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	in.Category = strings.TrimSpace(in.Category)
	if in.Category == "" || strings.ContainsAny(in.Category, " \t\n") || strings.TrimSpace(in.Summary) == "" {
		return Errorf("category (one word) and summary are required"), nil
	}
	t, ok := TurnFromContext(ctx)
	if !ok || c.Approvals == nil {
		return Errorf("no chat thread to ask in"), nil
	}
	outcome, err := c.Approvals.RequestApproval(ctx, t, in.Category, c.Redactor.Redact(in.Summary), c.Redactor.Redact(in.Details))
	if err != nil {
		return Result{}, err
	}
	return Result{Text: outcome}, nil
}

func (c *ChatServer) reply(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	if strings.TrimSpace(in.Text) == "" {
		return Errorf("text is empty"), nil
	}
	t, ok := TurnFromContext(ctx)
	if !ok {
		return Errorf("no chat thread to reply in"), nil
	}
	ts, err := t.Out.Post(ctx, c.Redactor.Redact(in.Text))
	if err != nil {
		return Result{}, err
	}
	if c.Replied != nil {
		c.Replied(ctx)
	}
	return Result{Text: "posted (ts " + ts + ")"}, nil
}

func (c *ChatServer) edit(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		TS   string `json:"ts"`
		Text string `json:"text"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	if in.TS == "" || strings.TrimSpace(in.Text) == "" {
		return Errorf("ts and text are required"), nil
	}
	t, ok := TurnFromContext(ctx)
	if !ok {
		return Errorf("no chat thread to edit in"), nil
	}
	if err := t.Out.Update(ctx, in.TS, c.Redactor.Redact(in.Text)); err != nil {
		return Result{}, err
	}
	return Result{Text: "edited " + in.TS}, nil
}
