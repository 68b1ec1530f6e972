package fake

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// AnthropicRequest is one request the Anthropic fake received. The parsed
// fields are zero when the body is not a JSON object.
type AnthropicRequest struct {
	// Method and Path are those of the HTTP request (Path without the query).
	Method, Path string
	// Header holds the request's headers, credentials included.
	Header http.Header
	// Body is the raw request body.
	Body []byte

	// Model is the body's model.
	Model string
	// System is the body's system prompt as sent: a JSON string or an array of
	// text blocks; nil when absent. [AnthropicRequest.SystemText] flattens it.
	System json.RawMessage
	// Messages is the body's messages array as sent.
	// [AnthropicRequest.ParsedMessages] decodes it.
	Messages json.RawMessage
	// Tools is the body's tools array as sent; nil when absent.
	Tools json.RawMessage
	// Stream is the body's stream flag.
	Stream bool
	// MaxTokens is the body's max_tokens.
	MaxTokens int64
}

// anthRequestWire is the part of a request body the fake reads.
type anthRequestWire struct {
	Model     string          `json:"model"`
	MaxTokens *int64          `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  json.RawMessage `json:"messages"`
	Tools     json.RawMessage `json:"tools"`
	Stream    bool            `json:"stream"`
}

// parse fills the parsed fields from r.Body, leaving them zero on bad JSON.
func (r *AnthropicRequest) parse() {
	var w anthRequestWire
	if json.Unmarshal(r.Body, &w) != nil {
		return
	}
	r.Model, r.System, r.Messages, r.Tools, r.Stream = w.Model, w.System, w.Messages, w.Tools, w.Stream
	if w.MaxTokens != nil {
		r.MaxTokens = *w.MaxTokens
	}
}

// SystemText returns the text of the system prompt: the string itself, or the
// texts of its blocks joined by newlines.
func (r AnthropicRequest) SystemText() string {
	return anthFlattenText(r.System)
}

// AnthropicMessage is one decoded entry of a request's messages array.
type AnthropicMessage struct {
	// Role is "user" or "assistant".
	Role string
	// Content holds the message's blocks; a string content becomes one text block.
	Content []AnthropicContent
}

// AnthropicContent is one decoded content block of a request message.
type AnthropicContent struct {
	// Type is the block type: text, image, tool_use, tool_result, thinking, ...
	Type string `json:"type"`
	// Text is the text of a text block.
	Text string `json:"text"`
	// ID and Name identify a tool_use block.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Input is the input of a tool_use block.
	Input json.RawMessage `json:"input"`
	// ToolUseID is the id a tool_result block answers.
	ToolUseID string `json:"tool_use_id"`
	// Content is the content of a tool_result block as sent: a string or an
	// array of blocks. [AnthropicContent.ResultText] flattens it.
	Content json.RawMessage `json:"content"`
	// IsError is the is_error flag of a tool_result block.
	IsError bool `json:"is_error"`
	// CacheControl is the block's cache_control as sent; nil when absent.
	CacheControl json.RawMessage `json:"cache_control"`
	// Source is the source of an image or document block as sent.
	// [AnthropicContent.Data] decodes a base64 one.
	Source json.RawMessage `json:"source"`
}

// AnthropicSource is the source of an image or document block.
type AnthropicSource struct {
	Type      string `json:"type"`       // base64, url, file, text, ...
	MediaType string `json:"media_type"` // image/png, application/pdf, ...
	Data      string `json:"data"`       // the base64 data of a base64 source
}

// ParsedSource decodes the block's source; the zero value when it has none.
func (c AnthropicContent) ParsedSource() AnthropicSource {
	var s AnthropicSource
	_ = json.Unmarshal(c.Source, &s)
	return s
}

// Data returns the bytes of an image or document block's base64 source,
// or nil.
func (c AnthropicContent) Data() []byte {
	s := c.ParsedSource()
	if s.Type != "base64" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s.Data)
	if err != nil {
		return nil
	}
	return b
}

// ResultText returns the text of a tool_result block's content.
func (c AnthropicContent) ResultText() string {
	return anthFlattenText(c.Content)
}

// ParsedMessages decodes the request's messages; it returns nil when they are
// not an array of messages.
func (r AnthropicRequest) ParsedMessages() []AnthropicMessage {
	msgs, err := anthDecodeMessages(r.Messages)
	if err != nil {
		return nil
	}
	return msgs
}

// LastUserText returns the text blocks of the request's last user message,
// joined by newlines, or "" when there is none.
func (r AnthropicRequest) LastUserText() string {
	msgs := r.ParsedMessages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var texts []string
		for _, c := range msgs[i].Content {
			if c.Type == "text" {
				texts = append(texts, c.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

// ToolNames returns the names of the tools the request offers, in order.
func (r AnthropicRequest) ToolNames() []string {
	var tools []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(r.Tools, &tools) != nil {
		return nil
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

// anthDecodeMessages decodes a messages array, turning string contents into
// one text block.
func anthDecodeMessages(raw json.RawMessage) ([]AnthropicMessage, error) {
	var wire []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, err
	}
	msgs := make([]AnthropicMessage, 0, len(wire))
	for _, m := range wire {
		msg := AnthropicMessage{Role: m.Role}
		var s string
		if err := json.Unmarshal(m.Content, &s); err == nil {
			msg.Content = []AnthropicContent{{Type: "text", Text: s}}
		} else if err := json.Unmarshal(m.Content, &msg.Content); err != nil {
			return nil, err
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// anthFlattenText returns a JSON string's value, or the texts of a JSON array
// of blocks joined by newlines.
func anthFlattenText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// anthEstimateInput returns a rough input token count for req: about four
// bytes of prompt per token, the rule of thumb the provider's docs give for
// English text.
func anthEstimateInput(req AnthropicRequest) int64 {
	n := int64(len(req.System)+len(req.Messages)+len(req.Tools)) / 4
	return max(n, 1)
}
