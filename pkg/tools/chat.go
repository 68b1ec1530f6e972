package tools

import (
	"context"
	"encoding/json"
	"strings"
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

// ChatServer is the agent_chat tool server: the agent's voice. Its tools
// are never gated.
type ChatServer struct {
	Redactor Redactor
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
	}
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
