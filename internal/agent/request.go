package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/tools"
)

// decodeHistory turns stored rows back into the model's messages.
func decodeHistory(rows []store.Message) ([]anthropic.MessageParam, error) {
	out := make([]anthropic.MessageParam, 0, len(rows)+4)
	for _, r := range rows {
		content := r.Content
		if r.Role == string(anthropic.MessageParamRoleUser) {
			content = upgradeLegacy(content)
		}
		var blocks []anthropic.ContentBlockParamUnion
		if err := json.Unmarshal(content, &blocks); err != nil {
			return nil, fmt.Errorf("history message %d: %w", r.Seq, err)
		}
		if len(blocks) == 0 {
			continue
		}
		out = append(out, anthropic.MessageParam{Role: anthropic.MessageParamRole(r.Role), Content: blocks})
	}
	return out, nil
}

// decodedTail is how many of the history's last messages a turn decodes:
// the turn looks there for tool calls left without results, and the last
// one carries the request's cache breakpoint. (Merged runs of one role
// alternate, so the last assistant message is among the last two.)
const decodedTail = 2

// requestHistory is the stored history as a turn sends it: runs of one
// role merged (the API wants them alternating), and all but the last
// decodedTail messages passed on as the JSON they were stored as — never
// decoded and encoded again, on every model call, as a long thread would
// otherwise be. The stored JSON is what the request encoder wrote when
// the message was new, so the bytes the provider's prompt cache keys on
// stay the same whichever form a message is sent in.
func requestHistory(rows []store.Message) ([]anthropic.MessageParam, error) {
	type run struct {
		role  string
		seq   int64
		parts []json.RawMessage // content arrays, none empty
	}
	var runs []run
	for _, r := range rows {
		content := bytes.TrimSpace(r.Content)
		if len(content) < 2 || content[0] != '[' || content[len(content)-1] != ']' {
			return nil, fmt.Errorf("history message %d: content is not a JSON array", r.Seq)
		}
		if len(bytes.TrimSpace(content[1:len(content)-1])) == 0 {
			continue // no blocks: nothing to send
		}
		if r.Role == string(anthropic.MessageParamRoleUser) {
			content = upgradeLegacy(content)
		}
		if n := len(runs); n > 0 && runs[n-1].role == r.Role {
			runs[n-1].parts = append(runs[n-1].parts, content)
			continue
		}
		runs = append(runs, run{role: r.Role, seq: r.Seq, parts: []json.RawMessage{content}})
	}
	out := make([]anthropic.MessageParam, 0, len(runs)+4)
	for i, r := range runs {
		if i < len(runs)-decodedTail {
			out = append(out, param.Override[anthropic.MessageParam](rawMessage(r.role, r.parts)))
			continue
		}
		m := anthropic.MessageParam{Role: anthropic.MessageParamRole(r.role)}
		for _, part := range r.parts {
			var blocks []anthropic.ContentBlockParamUnion
			if err := json.Unmarshal(part, &blocks); err != nil {
				return nil, fmt.Errorf("history message %d: %w", r.seq, err)
			}
			m.Content = append(m.Content, blocks...)
		}
		out = append(out, m)
	}
	return out, nil
}

// rawMessage is the JSON of a message of role whose content is the
// concatenation of the content arrays parts, as the request encoder
// writes it: {"content":[…],"role":"…"}.
func rawMessage(role string, parts []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"content":[`)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(p[1 : len(p)-1]) // requestHistory trimmed them
	}
	b.WriteString(`],"role":`)
	r, _ := json.Marshal(role)
	b.Write(r)
	b.WriteByte('}')
	return b.Bytes()
}

// isRaw reports whether m is passed on as stored JSON (requestHistory).
func isRaw(m anthropic.MessageParam) bool {
	_, ok := m.Overrides()
	return ok
}

// mergeRoles joins consecutive messages of the same role (a user message
// whose turn failed, followed by the next one), as the API would. Stored
// messages passed on as JSON were merged by requestHistory already.
func mergeRoles(msgs []anthropic.MessageParam) []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(msgs))
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role && !isRaw(m) && !isRaw(out[n-1]) {
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
		key := toolKey{name: t.Name, description: t.Description, last: i == len(ts)-1}
		if v, ok := toolJSON.Load(key); ok && bytes.Equal(v.(*toolEntry).schema, t.Schema) {
			out = append(out, anthropic.ToolUnionParam{OfTool: v.(*toolEntry).param})
			continue
		}
		w := wire{Name: t.Name, Description: t.Description, InputSchema: compactJSON(t.Schema)}
		if key.last {
			w.CacheControl = &cacheControl{Type: "ephemeral"}
		}
		b, err := json.Marshal(w)
		if err != nil {
			panic("agent: tool " + t.Name + " has an invalid schema") // the registry checks schemas at Add
		}
		tp := param.Override[anthropic.ToolParam](json.RawMessage(b))
		if _, had := toolJSON.Load(key); had || toolJSONSize.Add(1) <= maxToolJSON {
			toolJSON.Store(key, &toolEntry{schema: bytes.Clone(t.Schema), param: &tp})
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return out
}

// toolJSON keeps each tool's request form for the process (read-only: a
// request marshals it, nothing changes it): the simulator makes an engine
// per scenario, with the same tools each time. A tool is found by its
// name, description and place (last or not), and is the one kept when its
// schema is the one kept, byte for byte (a tool of the same name may come
// with another schema: it replaces the one kept). It holds at most
// maxToolJSON tools.
var (
	toolJSON     sync.Map // toolKey → *toolEntry
	toolJSONSize atomic.Int64
)

const maxToolJSON = 1024

type toolKey struct {
	name, description string
	last              bool // carries the tools' cache breakpoint
}

// toolEntry is a tool as the requests carry it: its JSON, built once, as
// the override of a ToolParam.
type toolEntry struct {
	schema json.RawMessage // as the registry has it
	param  *anthropic.ToolParam
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
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return redact(x)
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
	// Re-encoded even when nothing changed: the canonical form (sorted
	// keys) is what the message turns into when it is read back, so the
	// bytes sent in this turn and in later ones are the same (the
	// provider's prompt cache keys on them).
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
