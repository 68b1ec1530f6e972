package llm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/tidwall/sjson"
)

// emptyParams is the SDK's encoding of MessageNewParams{} (its required
// fields at their zero values), computed once.
var emptyParams = sync.OnceValues(func() ([]byte, error) {
	return anthropic.MessageNewParams{}.MarshalJSON()
})

// encodeParams encodes p as p.MarshalJSON does, byte for byte, but without
// the SDK's reflective encoder for the parts every model call sends: the
// messages and tools that are raw JSON already (the stored history, the
// tools built once) are copied as they are instead of being walked,
// validated and compacted again on every call — at a few hundred
// microseconds a call, the largest cost of the runtime's own between an
// event and its reply. Params with any field beyond model, max_tokens,
// system, tools and messages, or without messages, are encoded by the
// SDK.
//
// The body asks for a stream, as the SDK's NewStreaming makes it: the
// params' encoding with "stream":true set at its end.
func encodeParams(p anthropic.MessageNewParams) ([]byte, error) {
	if !plainParams(p) {
		b, err := p.MarshalJSON()
		if err != nil {
			return nil, err
		}
		return sjson.SetBytes(b, "stream", true)
	}
	return encodePlain(p)
}

// plainParams reports whether p sets nothing but model, max_tokens,
// system, tools and (some) messages.
func plainParams(p anthropic.MessageNewParams) bool {
	if len(p.Messages) == 0 {
		return false
	}
	rest := p
	rest.Model, rest.MaxTokens, rest.System, rest.Tools, rest.Messages = "", 0, nil, nil, nil
	restJSON, err := rest.MarshalJSON()
	empty, eerr := emptyParams()
	return err == nil && eerr == nil && bytes.Equal(restJSON, empty)
}

// encodePlain encodes params for which plainParams holds.
func encodePlain(p anthropic.MessageNewParams) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(16 << 10)
	b.WriteString(`{"max_tokens":`)
	b.WriteString(strconv.FormatInt(p.MaxTokens, 10))
	err := appendArray(&b, "messages", len(p.Messages), func(i int) error {
		m := p.Messages[i]
		return appendParam(&b, m.Overrides, m.MarshalJSON)
	})
	if err == nil && p.Model != "" {
		b.WriteString(`,"model":`)
		err = appendJSON(&b, string(p.Model))
	}
	if err == nil && len(p.System) > 0 {
		err = appendArray(&b, "system", len(p.System), func(i int) error {
			s := p.System[i]
			return appendParam(&b, s.Overrides, s.MarshalJSON)
		})
	}
	if err == nil && len(p.Tools) > 0 {
		err = appendArray(&b, "tools", len(p.Tools), func(i int) error {
			t := p.Tools[i]
			if t.OfTool != nil && isOnly(t) {
				return appendParam(&b, t.OfTool.Overrides, t.MarshalJSON)
			}
			return appendParam(&b, func() (any, bool) { return nil, false }, t.MarshalJSON)
		})
	}
	if err != nil {
		return nil, err
	}
	b.WriteString(`,"stream":true}`)
	return b.Bytes(), nil
}

// appendArray writes `,"key":[…]`, element i written by one.
func appendArray(b *bytes.Buffer, key string, n int, one func(i int) error) error {
	b.WriteString(`,"` + key + `":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := one(i); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// appendParam writes a param: its raw JSON override as it is, else what
// its MarshalJSON writes.
func appendParam(b *bytes.Buffer, overrides func() (any, bool), marshal func() ([]byte, error)) error {
	if v, ok := overrides(); ok {
		if raw, ok := v.(json.RawMessage); ok && len(raw) > 0 {
			b.Write(raw)
			return nil
		}
	}
	out, err := marshal()
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

// appendJSON writes v as encoding/json does.
func appendJSON(b *bytes.Buffer, v any) error {
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(out)
	return nil
}

// isOnly reports whether OfTool is the union's only variant (a union with
// two set is an error the SDK's encoder reports).
func isOnly(t anthropic.ToolUnionParam) bool {
	u := t
	u.OfTool = nil
	out, err := u.MarshalJSON()
	return err == nil && string(out) == "null"
}
