package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// AnthropicResponse scripts the Anthropic fake's answer to one request: an
// HTTP error when Status is set, otherwise a message. The same message is sent
// as JSON or as an event stream, whichever the request asked for.
type AnthropicResponse struct {
	// ID is the message id; empty: msg_fake_<n>.
	ID string
	// Model is the model the message names; empty: the request's model.
	Model string
	// Content holds the message's blocks, in order.
	Content []AnthropicBlock
	// StopReason is the stop reason; empty: tool_use when Content has a
	// tool_use block, end_turn otherwise.
	StopReason string
	// Usage is the token usage; all zero: estimated from the request and the
	// content.
	Usage AnthropicUsage

	// Status, when neither 0 nor 200, makes the answer an error with that
	// status, ErrorType (empty: the type the real API pairs with Status) and
	// ErrorMessage.
	Status       int
	ErrorType    string
	ErrorMessage string
	// RetryAfter and RetryAfterMs, when set, are sent as the retry-after and
	// retry-after-ms headers (the SDK honours "0" by retrying at once).
	RetryAfter, RetryAfterMs string
	// Header holds extra response headers.
	Header http.Header

	// InputChunks is how many input_json_delta pieces a streamed tool_use's
	// input is sent in (0: 3); ChunkDelay is the pause after every delta
	// of a stream (a model that writes slowly).
	InputChunks int
	ChunkDelay  time.Duration

	// StreamErrorType, when set, makes a stream send message_start and a ping,
	// then an error event of this type and StreamErrorMessage, and end: how the
	// real API reports overload once a stream has begun. A request without
	// stream gets the HTTP error of that type instead.
	StreamErrorType, StreamErrorMessage string
	// TruncateAfter, when positive, ends a stream after that many events, as a
	// dropped connection would: without message_stop.
	TruncateAfter int
	// NoStream answers with the plain JSON message even when the request
	// asked for a stream, as some gateways do.
	NoStream bool
	// Gate, when set, holds the answer until it is closed (or the request is
	// cancelled, or the fake closed), so tests can observe a call in flight.
	Gate <-chan struct{}
}

// AnthropicBlock is one content block of a scripted message.
type AnthropicBlock struct {
	// Type is text, tool_use or thinking.
	Type string
	// Text is the text of a text block.
	Text string
	// ID, Name and Input make a tool_use block. An empty ID becomes
	// toolu_fake_<n>; Input is marshalled to JSON (a json.RawMessage is sent
	// as is) and nil means {}.
	ID, Name string
	Input    any
	// Thinking and Signature make a thinking block.
	Thinking, Signature string
}

// AnthropicUsage is the token usage of a scripted message.
type AnthropicUsage struct {
	// InputTokens counts the uncached input tokens.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens counts the generated tokens.
	OutputTokens int64 `json:"output_tokens"`
	// CacheCreationInputTokens counts the input tokens written to the cache.
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	// CacheReadInputTokens counts the input tokens read from the cache.
	CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
}

// TextReply returns a message with one text block, stop reason end_turn.
func TextReply(text string) AnthropicResponse {
	return AnthropicResponse{Content: []AnthropicBlock{AnthropicText(text)}}
}

// ToolUse returns a message with one tool_use block, stop reason tool_use.
// input is marshalled to JSON; see [AnthropicBlock].
func ToolUse(id, name string, input any) AnthropicResponse {
	return AnthropicResponse{Content: []AnthropicBlock{AnthropicToolUse(id, name, input)}}
}

// APIError returns an error answer; an empty typ is the type the real API
// pairs with status (overloaded_error for 529, rate_limit_error for 429...).
func APIError(status int, typ, msg string) AnthropicResponse {
	return AnthropicResponse{Status: status, ErrorType: typ, ErrorMessage: msg}
}

// AnthropicStreamError returns an answer whose stream fails after it began,
// with an error event of type typ (overloaded_error, api_error...).
func AnthropicStreamError(typ, msg string) AnthropicResponse {
	return AnthropicResponse{StreamErrorType: typ, StreamErrorMessage: msg}
}

// AnthropicText returns a text block.
func AnthropicText(text string) AnthropicBlock {
	return AnthropicBlock{Type: "text", Text: text}
}

// AnthropicToolUse returns a tool_use block.
func AnthropicToolUse(id, name string, input any) AnthropicBlock {
	return AnthropicBlock{Type: "tool_use", ID: id, Name: name, Input: input}
}

// anthMessage is the wire form of a message.
type anthMessage struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        AnthropicUsage    `json:"usage"`

	blocks []AnthropicBlock // with ids and JSON inputs filled in
}

// anthBuildMessage turns a scripted response into the wire message for req.
func anthBuildMessage(req AnthropicRequest, resp AnthropicResponse, seq int) (anthMessage, error) {
	msg := anthMessage{
		ID:    resp.ID,
		Type:  "message",
		Role:  "assistant",
		Model: resp.Model,
		Usage: resp.Usage,
	}
	if msg.ID == "" {
		msg.ID = fmt.Sprintf("msg_fake_%04d", seq)
	}
	if msg.Model == "" {
		msg.Model = req.Model
	}
	stop := resp.StopReason
	var outChars int
	for i, b := range resp.Content {
		var raw any
		switch b.Type {
		case "text":
			raw = map[string]string{"type": "text", "text": b.Text}
			outChars += len(b.Text)
		case "thinking":
			raw = map[string]string{"type": "thinking", "thinking": b.Thinking, "signature": b.Signature}
			outChars += len(b.Thinking)
		case "tool_use":
			if b.Name == "" {
				return anthMessage{}, fmt.Errorf("content %d: tool_use without a name", i)
			}
			if b.ID == "" {
				b.ID = fmt.Sprintf("toolu_fake_%04d_%d", seq, i)
			}
			input, err := anthInputJSON(b.Input)
			if err != nil {
				return anthMessage{}, fmt.Errorf("content %d: %w", i, err)
			}
			b.Input = input
			raw = map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": input}
			outChars += len(input)
			if stop == "" {
				stop = "tool_use"
			}
		default:
			return anthMessage{}, fmt.Errorf("content %d: unknown block type %q", i, b.Type)
		}
		enc, err := json.Marshal(raw)
		if err != nil {
			return anthMessage{}, fmt.Errorf("content %d: %w", i, err)
		}
		msg.Content = append(msg.Content, enc)
		msg.blocks = append(msg.blocks, b)
	}
	if msg.Content == nil {
		msg.Content = []json.RawMessage{}
	}
	if stop == "" {
		stop = "end_turn"
	}
	msg.StopReason = &stop
	if msg.Usage == (AnthropicUsage{}) {
		msg.Usage = AnthropicUsage{InputTokens: anthEstimateInput(req), OutputTokens: int64(outChars/4) + 1}
	}
	return msg, nil
}

// anthInputJSON returns the JSON object of a tool_use input.
func anthInputJSON(input any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch v := input.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("tool_use input: %w", err)
		}
		raw = enc
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("tool_use input is not a JSON object: %s", raw)
	}
	return raw, nil
}
