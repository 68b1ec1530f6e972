package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/llm"
)

// benchParams is a first call of a turn's size: a system prompt of about
// 8 KB, 20 tools (raw JSON, as the agent builds them) and one message.
func benchParams() anthropic.MessageNewParams {
	var ts []anthropic.ToolUnionParam
	for i := range 20 {
		raw := fmt.Sprintf(`{"name":"tool_%d","description":%q,"input_schema":{"type":"object","properties":{"path":{"type":"string","description":"where"},"text":{"type":"string"}},"required":["path"]}}`, i, strings.Repeat("does a thing. ", 12))
		tp := param.Override[anthropic.ToolParam](json.RawMessage(raw))
		ts = append(ts, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return anthropic.MessageNewParams{
		MaxTokens: 8192,
		System:    []anthropic.TextBlockParam{{Text: strings.Repeat("You are a release manager. ", 300)}},
		Tools:     ts,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("<@U0MGR> (manager): bench"))},
	}
}

// BenchmarkSend is one model call through the client (the SDK's encoder,
// its stream decoder, the message accumulated) against the fake.
func BenchmarkSend(b *testing.B) {
	f := fake.NewAnthropic(b)
	f.Respond = func(fake.AnthropicRequest) fake.AnthropicResponse {
		return fake.ToolUse("t1", "reply", map[string]string{"text": "ack"})
	}
	c, err := llm.New(llm.Config{BaseURL: f.URL(), APIKey: testKey, Model: "claude-test"}, slog.New(slog.DiscardHandler), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := benchParams()
	for b.Loop() {
		if _, err := c.Send(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendRaw is the same call's bytes posted with net/http and the
// stream read to its end undecoded: the floor BenchmarkSend is held to.
func BenchmarkSendRaw(b *testing.B) {
	f := fake.NewAnthropic(b)
	f.Respond = func(fake.AnthropicRequest) fake.AnthropicResponse {
		return fake.ToolUse("t1", "reply", map[string]string{"text": "ack"})
	}
	p := benchParams()
	p.Model = "claude-test"
	body, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	body = append(body[:len(body)-1], `,"stream":true}`...)
	for b.Loop() {
		r, _ := http.NewRequest(http.MethodPost, f.URL()+"/v1/messages", bytes.NewReader(body))
		r.Header.Set("x-api-key", testKey)
		r.Header.Set("anthropic-version", "2023-06-01")
		r.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
