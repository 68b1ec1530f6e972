package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/tools"
)

// The tools block is the same bytes for the same tools, whichever engine
// builds it; a tool whose schema changed under the same name is built
// again from its new schema, and only the last tool carries the cache
// breakpoint.
func TestToolParamsKeptByNameAndSchema(t *testing.T) {
	schema := func(field string) json.RawMessage {
		return json.RawMessage(`{"type": "object", "properties": {"` + field + `": {"type": "string"}}}`)
	}
	ts := []tools.Tool{
		{Name: "kept_a", Description: "first", Schema: schema("x")},
		{Name: "kept_b", Description: "second", Schema: schema("y")},
	}
	encode := func(ts []tools.Tool) string {
		b, err := json.Marshal(toolParams(ts))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := encode(ts)
	want := `[{"name":"kept_a","description":"first","input_schema":{"type":"object","properties":{"x":{"type":"string"}}}},` +
		`{"name":"kept_b","description":"second","input_schema":{"type":"object","properties":{"y":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}]`
	if first != want {
		t.Fatalf("tools block\n got %s\nwant %s", first, want)
	}
	if again := encode(ts); again != first {
		t.Errorf("built again: %s, want %s", again, first)
	}
	changed := []tools.Tool{ts[0], {Name: "kept_b", Description: "second", Schema: schema("z")}}
	if got := encode(changed); got == first || !json.Valid([]byte(got)) || !strings.Contains(got, `"z":{"type":"string"}`) {
		t.Errorf("a changed schema kept the old one: %s", got)
	}
	var swapped []map[string]any
	if err := json.Unmarshal([]byte(encode([]tools.Tool{ts[1], ts[0]})), &swapped); err != nil {
		t.Fatal(err)
	}
	for i, tool := range swapped {
		if _, has := tool["cache_control"]; has != (i == len(swapped)-1) {
			t.Errorf("tool %d (%v) carries the breakpoint: %v, want it on the last alone", i, tool["name"], has)
		}
	}
}
