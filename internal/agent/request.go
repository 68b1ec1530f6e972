package agent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/tools"
)

// decodeHistory turns stored rows back into the model's messages.
func decodeHistory(rows []store.Message) ([]anthropic.MessageParam, error) {
	out := make([]anthropic.MessageParam, 0, len(rows)+4)
	for _, r := range rows {
		var blocks []anthropic.ContentBlockParamUnion
		if err := json.Unmarshal(r.Content, &blocks); err != nil {
			return nil, fmt.Errorf("history message %d: %w", r.Seq, err)
		}
		if len(blocks) == 0 {
			continue
		}
		out = append(out, anthropic.MessageParam{Role: anthropic.MessageParamRole(r.Role), Content: blocks})
	}
	return out, nil
}

// mergeRoles joins consecutive messages of the same role (a user message
// whose turn failed, followed by the next one), as the API would.
func mergeRoles(msgs []anthropic.MessageParam) []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(msgs))
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			merged := make([]anthropic.ContentBlockParamUnion, 0, len(out[n-1].Content)+len(m.Content))
			merged = append(merged, out[n-1].Content...)
			out[n-1].Content = append(merged, m.Content...)
			continue
		}
		out = append(out, m)
	}
	return out
}

// toolParams converts the registry's tools once, as raw JSON built here so
// that the tools block is byte-identical on every request (the provider's
// prompt cache keys on the bytes); the last tool carries the tools' cache
// breakpoint.
func toolParams(ts []tools.Tool) []anthropic.ToolUnionParam {
	type cacheControl struct {
		Type string `json:"type"`
	}
	type wire struct {
		Name         string          `json:"name"`
		Description  string          `json:"description,omitempty"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl *cacheControl   `json:"cache_control,omitempty"`
	}
	out := make([]anthropic.ToolUnionParam, 0, len(ts))
	for i, t := range ts {
		w := wire{Name: t.Name, Description: t.Description, InputSchema: compactJSON(t.Schema)}
		if i == len(ts)-1 {
			w.CacheControl = &cacheControl{Type: "ephemeral"}
		}
		raw, err := json.Marshal(w)
		if err != nil {
			panic("agent: tool " + t.Name + " has an invalid schema") // the registry checks schemas at Add
		}
		tp := param.Override[anthropic.ToolParam](json.RawMessage(raw))
		out = append(out, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return out
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// redactJSON redacts every string value of a JSON document, so that a
// pattern cannot swallow the document's syntax.
func redactJSON(raw json.RawMessage, redact func(string) string) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	changed := false
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if r := redact(x); r != x {
				changed = true
				return r
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
