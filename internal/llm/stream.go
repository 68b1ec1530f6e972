package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
)

// streamEvent is one event of a streamed answer, decoded with
// encoding/json: only what the accumulation and the watchers read, the
// message and its blocks kept as raw JSON. The SDK's stream decodes every
// event into its full union type, reflectively, and Accumulate decodes
// each block again and rewrites the message's raw JSON at every stop: for
// a turn's two calls that was most of the client's own time, and it grows
// with every delta of a long answer. Here the answer is put together as
// JSON and decoded once, by the SDK, at its end (accumulator.message).
type streamEvent struct {
	Type         string                     `json:"type"`
	Index        int64                      `json:"index"`
	Message      json.RawMessage            `json:"message"`
	ContentBlock json.RawMessage            `json:"content_block"`
	Delta        streamDelta                `json:"delta"`
	Usage        map[string]json.RawMessage `json:"usage"`
}

// streamDelta is a content_block_delta's delta or a message_delta's.
type streamDelta struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	PartialJSON string          `json:"partial_json"`
	Thinking    string          `json:"thinking"`
	Signature   string          `json:"signature"`
	Citation    json.RawMessage `json:"citation"`

	StopReason   json.RawMessage `json:"stop_reason"`
	StopSequence json.RawMessage `json:"stop_sequence"`
	StopDetails  json.RawMessage `json:"stop_details"`
	Container    json.RawMessage `json:"container"`
}

// blockHead is what a block's start says of it that deltas extend.
type blockHead struct {
	Type      string            `json:"type"`
	ID        string            `json:"id"`
	Name      string            `json:"name"`
	Text      string            `json:"text"`
	Thinking  string            `json:"thinking"`
	Signature string            `json:"signature"`
	Input     json.RawMessage   `json:"input"`
	Citations []json.RawMessage `json:"citations"`
}

// blockAcc is one content block being put together.
type blockAcc struct {
	fields map[string]json.RawMessage // as the block started
	head   blockHead
	// which of head's fields deltas changed
	text, thinking, signature, input, citations bool
	// the text, thinking and signature so far (head's, then the deltas'):
	// built, not concatenated again at every delta of a long answer
	textB, thinkingB, signatureB strings.Builder
}

// extend appends a delta to b, which starts from the block's own value.
func extend(b *strings.Builder, started *bool, initial, delta string) {
	if !*started {
		b.WriteString(initial)
		*started = true
	}
	b.WriteString(delta)
}

// accumulator puts a streamed answer together the way the SDK's
// Message.Accumulate does: the message as message_start gave it, its
// blocks from their starts and deltas, stop reason and usage from
// message_delta.
type accumulator struct {
	fields  map[string]json.RawMessage // the message, as it started
	usage   map[string]json.RawMessage
	blocks  []*blockAcc
	stopped bool
}

// usageKeys are the usage counts message_delta overwrites when it carries
// them (output_tokens always), as Accumulate does.
var usageKeys = []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use", "output_tokens_details"}

// add takes one event in. Its errors are the stream's fault.
func (a *accumulator) add(ev *streamEvent) error {
	switch ev.Type {
	case "message_start":
		a.fields, a.usage, a.blocks = nil, nil, nil
		if err := json.Unmarshal(ev.Message, &a.fields); err != nil {
			return fmt.Errorf("message_start: %w", err)
		}
		if u := a.fields["usage"]; len(u) > 0 && !isNull(u) {
			if err := json.Unmarshal(u, &a.usage); err != nil {
				return fmt.Errorf("message_start usage: %w", err)
			}
		}
		var content []json.RawMessage
		if c := a.fields["content"]; len(c) > 0 && !isNull(c) {
			if err := json.Unmarshal(c, &content); err != nil {
				return fmt.Errorf("message_start content: %w", err)
			}
		}
		for _, raw := range content {
			b, err := newBlock(raw)
			if err != nil {
				return err
			}
			a.blocks = append(a.blocks, b)
		}
	case "message_delta":
		if a.fields == nil {
			a.fields = map[string]json.RawMessage{}
		}
		// Always sent, null their final value when the turn has none.
		a.fields["stop_reason"] = orNull(ev.Delta.StopReason)
		a.fields["stop_sequence"] = orNull(ev.Delta.StopSequence)
		a.fields["stop_details"] = orNull(ev.Delta.StopDetails)
		if len(ev.Delta.Container) > 0 {
			a.fields["container"] = ev.Delta.Container
		}
		if a.usage == nil {
			a.usage = map[string]json.RawMessage{}
		}
		a.usage["output_tokens"] = json.RawMessage("0")
		if v, ok := ev.Usage["output_tokens"]; ok && !isNull(v) {
			a.usage["output_tokens"] = v
		}
		for _, k := range usageKeys {
			if v, ok := ev.Usage[k]; ok && !isNull(v) {
				a.usage[k] = v
			}
		}
	case "content_block_start":
		// Blocks start in index order with no gaps.
		if ev.Index != int64(len(a.blocks)) {
			return fmt.Errorf("received event of type %s for content block at index %d, expected index %d", ev.Type, ev.Index, len(a.blocks))
		}
		b, err := newBlock(ev.ContentBlock)
		if err != nil {
			return err
		}
		a.blocks = append(a.blocks, b)
	case "content_block_delta":
		b, err := a.block(ev)
		if err != nil {
			return err
		}
		d := &ev.Delta
		switch d.Type {
		case "text_delta":
			extend(&b.textB, &b.text, b.head.Text, d.Text)
		case "input_json_delta":
			if d.PartialJSON != "" {
				if string(b.head.Input) == "{}" { // the start's empty input is replaced
					b.head.Input = nil
				}
				b.head.Input = append(b.head.Input, d.PartialJSON...)
				b.input = true
			}
		case "thinking_delta":
			extend(&b.thinkingB, &b.thinking, b.head.Thinking, d.Thinking)
		case "signature_delta":
			extend(&b.signatureB, &b.signature, b.head.Signature, d.Signature)
		case "citations_delta":
			b.head.Citations = append(b.head.Citations, d.Citation)
			b.citations = true
		}
	case "content_block_stop":
		if _, err := a.block(ev); err != nil {
			return err
		}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

// newBlock starts a block from its JSON.
func newBlock(raw json.RawMessage) (*blockAcc, error) {
	b := &blockAcc{}
	if err := json.Unmarshal(raw, &b.fields); err != nil {
		return nil, fmt.Errorf("content block: %w", err)
	}
	if err := json.Unmarshal(raw, &b.head); err != nil {
		return nil, fmt.Errorf("content block: %w", err)
	}
	return b, nil
}

// block returns the block a delta or stop is for.
func (a *accumulator) block(ev *streamEvent) (*blockAcc, error) {
	if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
		return nil, fmt.Errorf("received event of type %s for content block at index %d, only %d blocks", ev.Type, ev.Index, len(a.blocks))
	}
	return a.blocks[ev.Index], nil
}

// message returns the answer put together, decoded once by the SDK. It
// fails where the parts do not make a JSON message (a tool input cut
// short): the caller then has the SDK accumulate the events instead.
func (a *accumulator) message() (*anthropic.Message, error) {
	fields := make(map[string]json.RawMessage, len(a.fields)+1)
	for k, v := range a.fields {
		fields[k] = v
	}
	var content bytes.Buffer
	content.WriteByte('[')
	for i, b := range a.blocks {
		if i > 0 {
			content.WriteByte(',')
		}
		raw, err := b.json()
		if err != nil {
			return nil, err
		}
		content.Write(raw)
	}
	content.WriteByte(']')
	fields["content"] = content.Bytes()
	if a.usage != nil {
		u, err := json.Marshal(a.usage)
		if err != nil {
			return nil, err
		}
		fields["usage"] = u
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var msg anthropic.Message
	if err := msg.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return &msg, nil
}

// json is the block as it started with what deltas changed.
func (b *blockAcc) json() (json.RawMessage, error) {
	if !b.text && !b.thinking && !b.signature && !b.input && !b.citations {
		return json.Marshal(b.fields)
	}
	fields := make(map[string]json.RawMessage, len(b.fields)+1)
	for k, v := range b.fields {
		fields[k] = v
	}
	set := func(changed bool, key string, v any) error {
		if !changed {
			return nil
		}
		raw, err := json.Marshal(v)
		fields[key] = raw
		return err
	}
	if b.input {
		fields["input"] = b.head.Input // not JSON (cut by max_tokens): Marshal says so
	}
	for _, err := range []error{
		set(b.text, "text", b.textB.String()),
		set(b.thinking, "thinking", b.thinkingB.String()),
		set(b.signature, "signature", b.signatureB.String()),
		set(b.citations, "citations", b.head.Citations),
	} {
		if err != nil {
			return nil, err
		}
	}
	return json.Marshal(fields)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// streamError is the error an `error` event carries, as the SDK's stream
// makes it: an *anthropic.Error with the response's status and request id.
func streamError(resp *http.Response, data []byte) error {
	aerr := &anthropic.Error{}
	if resp != nil {
		aerr.Request = resp.Request
		aerr.Response = resp
		aerr.StatusCode = resp.StatusCode
		aerr.RequestID = resp.Header.Get("request-id")
	}
	if aerr.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", strings.TrimSpace(string(data)))
	}
	return aerr
}
