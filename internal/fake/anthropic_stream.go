package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// anthEvent is one server-sent event.
type anthEvent struct {
	name string
	data any
}

// anthStream writes msg as the event stream of the real API: message_start,
// per block content_block_start, deltas and content_block_stop, a ping after
// the first block starts, then message_delta and message_stop. Every event
// has an event: line, which the SDK needs to decode it.
func anthStream(w http.ResponseWriter, msg anthMessage, resp AnthropicResponse) {
	events := anthStreamEvents(msg, resp)
	if resp.TruncateAfter > 0 && resp.TruncateAfter < len(events) {
		events = events[:resp.TruncateAfter]
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, ev := range events {
		data, err := json.Marshal(ev.data)
		if err != nil {
			return // every event is built from marshallable values
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, data); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if ev.name == "content_block_delta" && resp.ChunkDelay > 0 {
			time.Sleep(resp.ChunkDelay)
		}
	}
}

// anthStreamEvents returns the events of msg's stream.
func anthStreamEvents(msg anthMessage, resp AnthropicResponse) []anthEvent {
	start := msg
	start.Content = []json.RawMessage{}
	start.StopReason = nil
	// message_start carries the input side of usage; output is counted in
	// message_delta. The real API reports a small output count here too.
	start.Usage.OutputTokens = 1
	events := []anthEvent{{"message_start", map[string]any{"type": "message_start", "message": start}}}
	ping := anthEvent{"ping", map[string]string{"type": "ping"}}

	if resp.StreamErrorType != "" {
		return append(events, ping, anthEvent{"error", anthErrorBody(resp.StreamErrorType, resp.StreamErrorMessage, "")})
	}
	if len(msg.blocks) == 0 {
		events = append(events, ping)
	}
	for i, b := range msg.blocks {
		var first map[string]any
		var deltas []map[string]any
		switch b.Type {
		case "text":
			first = map[string]any{"type": "text", "text": ""}
			for _, c := range anthChunks(b.Text, 3) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": c})
			}
		case "thinking":
			first = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			for _, c := range anthChunks(b.Thinking, 3) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": c})
			}
			if b.Signature != "" {
				deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": b.Signature})
			}
		case "tool_use":
			// The start carries an empty input; the JSON follows in pieces,
			// the first of them empty, as the real API sends it.
			first = map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": ""})
			input, _ := b.Input.(json.RawMessage)
			for _, c := range anthChunks(string(input), max(resp.InputChunks, 3)) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": c})
			}
		}
		events = append(events, anthEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": first}})
		if i == 0 {
			events = append(events, ping)
		}
		for _, d := range deltas {
			events = append(events, anthEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}})
		}
		events = append(events, anthEvent{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
	}
	events = append(events,
		anthEvent{"message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil},
			"usage": msg.Usage,
		}},
		anthEvent{"message_stop", map[string]string{"type": "message_stop"}},
	)
	return events
}

// anthChunks splits s into at most n pieces of about equal length, at rune
// boundaries, so that every piece is valid UTF-8. An empty s has no pieces.
func anthChunks(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := max((len(s)+n-1)/n, 1)
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
