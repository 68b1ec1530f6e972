package llm

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/tidwall/sjson"
)

// encodeParams writes exactly what the SDK's encoder writes, for the
// params a turn sends and for those it leaves to the SDK.
func TestEncodeParamsMatchesTheSDK(t *testing.T) {
	rawTool := param.Override[anthropic.ToolParam](json.RawMessage(
		`{"name":"reply","description":"Posts \u003cthis\u003e","input_schema":{"type":"object","properties":{"text":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}`))
	rawMsg := param.Override[anthropic.MessageParam](json.RawMessage(
		`{"content":[{"text":"\u003c@U0MGR\u003e (manager): hi \u0026 bye","type":"text"},{"text":"more","type":"text"}],"role":"user"}`))
	toolUse := anthropic.NewAssistantMessage(
		anthropic.NewTextBlock("thinking <out loud>"),
		anthropic.NewToolUseBlock("toolu_1", map[string]any{"b": 1, "a": "<x>"}, "reply"))
	result := anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "ok & done", false))
	result.Content[0].OfToolResult.CacheControl = anthropic.NewCacheControlEphemeralParam()
	typed := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "typed", Description: anthropic.String("a typed tool"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"q": map[string]any{"type": "string"}}}}}
	system := []anthropic.TextBlockParam{{Text: "You are <Benchbot> & you answer."},
		{Text: "This thread.", CacheControl: anthropic.NewCacheControlEphemeralParam()}}

	base := func() anthropic.MessageNewParams {
		return anthropic.MessageNewParams{
			Model: "claude-test", MaxTokens: 8192, System: system,
			Tools:    []anthropic.ToolUnionParam{{OfTool: &rawTool}, typed},
			Messages: []anthropic.MessageParam{rawMsg, toolUse, result},
		}
	}
	sdk := map[string]bool{} // left to the SDK
	for _, name := range []string{"temperature (the SDK)", "tool choice (the SDK)", "no messages (the SDK)", "extra field (the SDK)"} {
		sdk[name] = true
	}
	cases := map[string]func(p *anthropic.MessageNewParams){
		"a turn's call":         func(*anthropic.MessageNewParams) {},
		"no tools, no system":   func(p *anthropic.MessageNewParams) { p.Tools, p.System = nil, nil },
		"no model":              func(p *anthropic.MessageNewParams) { p.Model = "" },
		"temperature (the SDK)": func(p *anthropic.MessageNewParams) { p.Temperature = anthropic.Float(0.2) },
		"tool choice (the SDK)": func(p *anthropic.MessageNewParams) {
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
		},
		"no messages (the SDK)": func(p *anthropic.MessageNewParams) { p.Messages = nil },
		"extra field (the SDK)": func(p *anthropic.MessageNewParams) { p.SetExtraFields(map[string]any{"x": 1}) },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			p := base()
			change(&p)
			want, err := p.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			// What the SDK's NewStreaming sends: "stream" set last.
			if want, err = sjson.SetBytes(want, "stream", true); err != nil {
				t.Fatal(err)
			}
			if plainParams(p) == sdk[name] {
				t.Fatalf("plainParams = %v", !sdk[name])
			}
			got, err := encodeParams(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("encodeParams:\n%s\nthe SDK:\n%s", got, want)
			}
		})
	}
}
