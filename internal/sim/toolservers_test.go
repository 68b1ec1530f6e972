package sim

import (
	"reflect"
	"testing"
)

func TestParseScenarioToolServers(t *testing.T) {
	src := `tool_servers:
  tracker:
    tools:
      whoami: "acting as {account}"
      my_issues: none
    connected: {manager: ana@tracker, U0ZED: zed}
steps: [{send: {text: hi}}]
`
	sc, err := ParseScenario("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolServer{{Name: "tracker",
		Tools:     []ServedTool{{Name: "whoami", Answer: "acting as {account}"}, {Name: "my_issues", Answer: "none"}},
		Connected: []Connection{{As: "manager", Account: "ana@tracker"}, {As: "U0ZED", Account: "zed"}}}}
	if !reflect.DeepEqual(sc.ToolServers, want) {
		t.Fatalf("tool servers = %+v\nwant %+v", sc.ToolServers, want)
	}
}

// Each mistake is one line naming the file, the line and the field.
func TestParseScenarioToolServersErrors(t *testing.T) {
	const f = "sim/scenarios/x.yaml"
	cases := []struct{ name, src, want string }{
		{"not a mapping", "tool_servers: [tracker]\n", f + ":1: tool_servers must be a mapping of keys"},
		{"bad server name", "tool_servers:\n  trac ker: {tools: {a: b}}\n", f + `:2: tool_servers: "trac ker" is not a tool server name`},
		{"server name with __", "tool_servers:\n  a__b: {tools: {a: b}}\n", f + `:2: tool_servers: "a__b" is not a tool server name`},
		{"unknown key", "tool_servers:\n  tracker:\n    tools: {a: b}\n    url: x\n", f + `:4: unknown key "url" in tool_servers.tracker (want tools or connected)`},
		{"no tools", "tool_servers:\n  tracker: {connected: {manager: ana}}\n", f + ":2: tool_servers.tracker: no tools"},
		{"tools not a mapping", "tool_servers:\n  tracker: {tools: [whoami]}\n", f + ":2: tools in tool_servers.tracker.tools must be a mapping"},
		{"bad tool name", "tool_servers:\n  tracker: {tools: {who am i: x}}\n", f + `:2: tool_servers.tracker.tools: "who am i" is not a tool name`},
		{"answer not a string", "tool_servers:\n  tracker: {tools: {whoami: [x]}}\n", f + ":2: whoami in tool_servers.tracker.tools must be a string"},
		{"unknown person", "tool_servers:\n  tracker:\n    tools: {a: b}\n    connected: {ceo: ana}\n", f + `:4: tool_servers.tracker.connected: unknown person "ceo"`},
		{"empty account", "tool_servers:\n  tracker:\n    tools: {a: b}\n    connected: {manager: ''}\n", f + ":4: tool_servers.tracker.connected.manager: the account is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parseFails(t, f, c.src+"steps: [{send: {text: hi}}]\n", c.want)
		})
	}
}
