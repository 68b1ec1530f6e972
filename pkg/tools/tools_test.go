package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// tool returns a complete tool named name answering text.
func tool(name, text string) tools.Tool {
	return tools.Tool{
		Name:        name,
		Description: "The " + name + " tool.",
		Schema:      json.RawMessage(`{"type":"object"}`),
		Call: func(context.Context, json.RawMessage) (tools.Result, error) {
			return tools.Result{Text: text}, nil
		},
	}
}

func names(ts []tools.Tool) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestRegistryOrder(t *testing.T) {
	r := tools.NewRegistry()
	r.Add(tool("mcp__b", "b"), tool("Read", "r"))
	r.Add(tool("mcp__a", "a"))
	r.Add((&tools.ChatServer{}).Tools()...)
	want := []string{"Read", "mcp__a", "mcp__agent_chat__edit", "mcp__agent_chat__get_channel_history", "mcp__agent_chat__get_channel_info",
		"mcp__agent_chat__get_thread_history", "mcp__agent_chat__get_user", "mcp__agent_chat__list_channel_members", "mcp__agent_chat__react",
		"mcp__agent_chat__reply", "mcp__agent_chat__request_approval", "mcp__agent_chat__unreact", "mcp__agent_chat__upload", "mcp__b"}
	for i := range 3 {
		if got := names(r.List()); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("List #%d = %q, want %q", i, got, want)
		}
	}
	if got, ok := r.Get("mcp__a"); !ok || got.Name != "mcp__a" {
		t.Errorf("Get(mcp__a) = %q, %v", got.Name, ok)
	}
	if _, ok := r.Get("nope"); ok {
		t.Error("Get(nope) found a tool")
	}
}

func TestRegistryAddPanics(t *testing.T) {
	noCall := tool("x", "")
	noCall.Call = nil
	noSchema := tool("x", "")
	noSchema.Schema = nil
	badSchema := tool("x", "")
	badSchema.Schema = json.RawMessage(`{"type":"object",`)
	tests := []struct {
		name  string
		first []tools.Tool
		add   []tools.Tool
	}{
		{name: "duplicate across calls", first: []tools.Tool{tool("x", "")}, add: []tools.Tool{tool("x", "")}},
		{name: "duplicate in one call", add: []tools.Tool{tool("x", ""), tool("x", "")}},
		{name: "no name", add: []tools.Tool{tool("", "")}},
		{name: "no call", add: []tools.Tool{noCall}},
		{name: "no schema", add: []tools.Tool{noSchema}},
		// The engine serialises schemas once, trusting Add to have checked
		// them (agent.toolParams panics otherwise).
		{name: "schema not JSON", add: []tools.Tool{badSchema}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tools.NewRegistry()
			r.Add(tt.first...)
			defer func() {
				v := recover()
				if v == nil {
					t.Fatal("Add did not panic")
				}
				if msg, _ := v.(string); !strings.HasPrefix(msg, "tools: ") {
					t.Errorf("panic %v, want a message prefixed tools:", v)
				}
			}()
			r.Add(tt.add...)
		})
	}
}

func TestRegistryCall(t *testing.T) {
	var gotInput string
	echo := tool("echo", "")
	echo.Call = func(_ context.Context, in json.RawMessage) (tools.Result, error) {
		gotInput = string(in)
		return tools.Result{Text: "echoed"}, nil
	}
	boom := errors.New("boom")
	failing := tool("failing", "")
	failing.Call = func(context.Context, json.RawMessage) (tools.Result, error) { return tools.Result{}, boom }
	r := tools.NewRegistry()
	r.Add(echo, failing)

	tests := []struct {
		name    string
		tool    string
		want    tools.Result
		wantErr error
	}{
		{name: "known tool", tool: "echo", want: tools.Result{Text: "echoed"}},
		{name: "unknown tool", tool: "mcp__nope", want: tools.Result{Text: `unknown tool "mcp__nope"`, IsError: true}},
		{name: "error passed on", tool: "failing", wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Call(t.Context(), tt.tool, json.RawMessage(`{"a":1}`))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Call error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Call = %+v, want %+v", got, tt.want)
			}
		})
	}
	if gotInput != `{"a":1}` {
		t.Errorf("the tool got input %q, want it as given", gotInput)
	}
}

func TestErrorf(t *testing.T) {
	if got := tools.Errorf("no %s here", "ts"); got != (tools.Result{Text: "no ts here", IsError: true}) {
		t.Errorf("Errorf = %+v", got)
	}
}

// Every tool's schema is a JSON object schema whose required fields are
// among its properties.
func TestSchemas(t *testing.T) {
	all := (&tools.ChatServer{}).Tools()
	for _, tl := range all {
		t.Run(tl.Name, func(t *testing.T) {
			if tl.Description == "" || tl.Call == nil {
				t.Error("tool without a description or a Call")
			}
			var s struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal(tl.Schema, &s); err != nil {
				t.Fatalf("schema is not valid JSON: %v", err)
			}
			if s.Type != "object" {
				t.Errorf("schema type = %q, want object", s.Type)
			}
			for _, req := range s.Required {
				if _, ok := s.Properties[req]; !ok {
					t.Errorf("required field %q is not a property", req)
				}
			}
		})
	}
}

func TestTurnContext(t *testing.T) {
	if _, ok := tools.TurnFromContext(t.Context()); ok {
		t.Error("TurnFromContext found a turn in an empty context")
	}
	if _, ok := tools.TurnFromContext(tools.NewContextWithTurn(t.Context(), nil)); ok {
		t.Error("TurnFromContext found a nil turn")
	}
	turn := &pipeline.Turn{}
	if got, ok := tools.TurnFromContext(tools.NewContextWithTurn(t.Context(), turn)); !ok || got != turn {
		t.Errorf("TurnFromContext = %p, %v; want %p", got, ok, turn)
	}
}
