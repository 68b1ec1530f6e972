package tools

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func writeMCPConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadMCPConfig(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"TOKEN": "tok-1234", "HOST": "example.com", "BIN": "/opt/bin"}[k]
	}
	path := writeMCPConfig(t, `{"mcpServers": {
		"zeta": {"command": "${BIN}/server", "args": ["--host=${HOST}", "${NOPE:-dflt}", "${GONE}"], "env": {"API_TOKEN": "${TOKEN}"}},
		"alpha-1": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"b_sse": {"type": "SSE", "url": "http://${HOST:-x}/sse"},
		"inferred": {"url": "http://user:pw-literal@localhost:1/mcp?api_key=literal-key"}
	}}`)
	cfg, err := LoadMCPConfig(path, env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"alpha-1", "b_sse", "inferred", "zeta"}; !slices.Equal(names, want) {
		t.Fatalf("servers %v, want %v", names, want)
	}
	a, b, inf, z := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2], cfg.Servers[3]
	if a.Type != MCPHTTP || a.URL != "https://example.com/mcp" || a.Headers["Authorization"] != "Bearer tok-1234" {
		t.Errorf("http entry %+v", a)
	}
	if b.Type != MCPSSE || b.URL != "http://example.com/sse" || inf.Type != MCPHTTP {
		t.Errorf("sse entry %+v, inferred %+v", b, inf)
	}
	if z.Type != MCPStdio || z.Command != "/opt/bin/server" || z.Env["API_TOKEN"] != "tok-1234" ||
		!slices.Equal(z.Args, []string{"--host=example.com", "dflt", ""}) || !slices.Equal(z.Missing, []string{"GONE"}) {
		t.Errorf("stdio entry %+v", z)
	}
	if got := z.scrub("failed: token tok-1234 rejected"); strings.Contains(got, "tok-1234") {
		t.Errorf("scrub left the secret: %q", got)
	}
	if got := inf.scrub(`Post "` + inf.URL + `": refused`); strings.Contains(got, "literal") {
		t.Errorf("scrub left a URL credential: %q", got)
	}
}

func TestLoadMCPConfigEmpty(t *testing.T) {
	for name, path := range map[string]string{
		"missing file": filepath.Join(t.TempDir(), "none.json"),
		"blank file":   writeMCPConfig(t, " \n"),
		"no servers":   writeMCPConfig(t, `{"other": 1}`),
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadMCPConfig(path, os.Getenv)
			if err != nil || cfg == nil || len(cfg.Servers) != 0 {
				t.Errorf("got %v, %v; want an empty config", cfg, err)
			}
		})
	}
}

func TestLoadMCPConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"bad json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", []string{"mcp.json:3:", "invalid character"}},
		{"wrong type", `{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, []string{"mcp.json:1:", "[]string"}},
		{"neither command nor url", `{"mcpServers": {"broken": {"args": ["x"]}}}`, []string{`server "broken"`, "neither command nor url"}},
		{"bad name", `{"mcpServers": {"a.b": {"command": "x"}}}`, []string{`server "a.b"`, "must match"}},
		{"reserved name", `{"mcpServers": {"agent_chat": {"command": "x"}}}`, []string{`server "agent_chat"`, "reserved"}},
		{"unknown type", `{"mcpServers": {"a": {"type": "ws", "url": "ws://x"}}}`, []string{`server "a"`, `"ws"`}},
		{"http without url", `{"mcpServers": {"a": {"type": "http", "command": "x"}}}`, []string{`server "a"`, "without a url"}},
		{"runtime credential", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${LLM_API_KEY}"}}}}`, []string{`server "a"`, "${LLM_API_KEY}", "runtime credential"}},
		{"credential in header", `{"mcpServers": {"a": {"url": "http://x", "headers": {"A": "${CHAT_BOT_TOKEN:-x}"}}}}`, []string{`server "a"`, "${CHAT_BOT_TOKEN}"}},
		{"database address", `{"mcpServers": {"db": {"command": "x", "args": ["--db=${AGENT_DB_URL}"]}}}`, []string{`server "db"`, "${AGENT_DB_URL}", "runtime credential"}},
		{"signing secret", `{"mcpServers": {"a": {"url": "http://x", "headers": {"S": "${CHAT_SIGNING_SECRET}"}}}}`, []string{`server "a"`, "${CHAT_SIGNING_SECRET}"}},
		{"any LLM variable", `{"mcpServers": {"a": {"command": "${LLM_BASE_URL}"}}}`, []string{`server "a"`, "${LLM_BASE_URL}"}},
		{"bad env name", `{"mcpServers": {"a": {"command": "x", "env": {"A=B": "1"}}}}`, []string{`server "a"`, "invalid env name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeMCPConfig(t, tc.text)
			_, err := LoadMCPConfig(path, func(string) string { return "secret-value" })
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range append(tc.want, path) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, "secret-value") {
				t.Errorf("error %q is not one safe line", msg)
			}
		})
	}
}

func TestMCPExpand(t *testing.T) {
	env := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	for _, tc := range []struct{ in, want string }{
		{"${A}", "1"},
		{"x${A}y${B}z", "x1ytwoz"},
		{"${A:-d}", "1"},
		{"${U:-d}", "d"},
		{"${EMPTY:-d}", "d"},
		{"${U:-}", ""},
		{"${U}", ""},
		{"${U:-a:-b}", "a:-b"},
		{"$A and $", "$A and $"},
		{"${unterminated", "${unterminated"},
		{"${bad-name}", "${bad-name}"},
		{"${}", "${}"},
	} {
		x := expander{getenv: func(k string) string { return env[k] }}
		if got := x.expand(tc.in); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMCPWithRunner(t *testing.T) {
	npx := MCPServer{Type: MCPStdio, Command: "npx", Args: []string{"-y", "pkg"}}
	for _, tc := range []struct {
		name, runner string
		in           MCPServer
		cmd          string
		args         []string
	}{
		{"bunx", "bunx", npx, "bunx", []string{"-y", "pkg"}},
		{"runner with args", "pnpm  dlx", npx, "pnpm", []string{"dlx", "-y", "pkg"}},
		{"empty runner", "", npx, "npx", []string{"-y", "pkg"}},
		{"npx runner", "npx", npx, "npx", []string{"-y", "pkg"}},
		{"other command", "bunx", MCPServer{Type: MCPStdio, Command: "node", Args: []string{"s.js"}}, "node", []string{"s.js"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.withRunner(tc.runner)
			if got.Command != tc.cmd || !slices.Equal(got.Args, tc.args) {
				t.Errorf("got %s %v, want %s %v", got.Command, got.Args, tc.cmd, tc.args)
			}
		})
	}
	if !slices.Equal(npx.Args, []string{"-y", "pkg"}) {
		t.Errorf("withRunner changed its receiver's args: %v", npx.Args)
	}
}

func TestMCPEnv(t *testing.T) {
	got := mcpEnv([]string{"PATH=/bin", "HOME=/root", "LLM_API_KEY=k", "CHAT_APP_TOKEN=t", "junk"},
		map[string]string{"HOME": "/srv", "Z": "1"})
	want := []string{"PATH=/bin", "HOME=/srv", "Z=1"}
	if !slices.Equal(got, want) {
		t.Errorf("mcpEnv = %v, want %v", got, want)
	}
	if env := mcpEnv(nil, nil); env == nil {
		t.Error("mcpEnv(nil, nil) is nil: the process would inherit the runtime's environment")
	}
}

func TestMCPToolConversion(t *testing.T) {
	s := &mcpSession{srv: MCPServer{Name: "srv"}}
	for _, tc := range []struct {
		name   string
		tool   mcp.Tool
		want   string
		schema string
		err    bool
	}{
		{"plain", mcp.Tool{Name: "get", InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}}, "mcp__srv__get", `{"properties":{},"type":"object"}`, false},
		{"no schema", mcp.Tool{Name: "a.b/c"}, "mcp__srv__a_b_c", `{"type":"object"}`, false},
		{"non-object schema", mcp.Tool{Name: "x", InputSchema: true}, "mcp__srv__x", `{"type":"object"}`, false},
		{"too long", mcp.Tool{Name: strings.Repeat("n", 60)}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.tool(&tc.tool)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (got.Name != tc.want || string(got.Schema) != tc.schema) {
				t.Errorf("got %s %s, want %s %s", got.Name, got.Schema, tc.want, tc.schema)
			}
		})
	}
}

func TestMCPResultText(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "a"},
		&mcp.AudioContent{MIMEType: "audio/wav"},
		&mcp.ResourceLink{URI: "file:///x"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///y", Text: "inline"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///z", Blob: []byte{1}}},
	}}
	want := "a\n[audio audio/wav]\n[resource link file:///x]\ninline\n[resource file:///z]"
	if got := mcpResultText(res); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	structured := &mcp.CallToolResult{StructuredContent: map[string]int{"n": 1}}
	if got := mcpResultText(structured); !reflect.DeepEqual(got, `{"n":1}`) {
		t.Errorf("structured = %q", got)
	}
}

// The values a tool server is given that are credentials join the
// runtime's redactor; plain settings do not (they would be masked in every
// reply that says the word).
func TestMCPConfigSecrets(t *testing.T) {
	env := func(k string) string {
		return map[string]string{"GH_TOKEN": "ghp_FromTheEnvironment0001", "REGION": "eu-west-1", "HOME": "/home/agent-user",
			"VENDOR_KEY": "plainkeyvalue"}[k]
	}
	path := writeMCPConfig(t, `{"mcpServers": {
		"gh": {"command": "x", "args": ["--data=${HOME}/data", "--k=${VENDOR_KEY}"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GH_TOKEN}", "NODE_ENV": "production",
			"DATA_DIR": "/srv/data/with-digits-2024", "SOME_ID": "Zq81mWp0XyT5rKc3", "AREA": "${REGION}"}},
		"api": {"url": "https://api.example.com/mcp?format=json&api_key=LiteralQueryKey77", "headers": {
			"Authorization": "Bearer literal-bearer-token-1234", "Accept": "application/json", "X-Custom": "plain-words-only-here"}}
	}}`)
	cfg, err := LoadMCPConfig(path, env)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Secrets()
	for _, want := range []string{"ghp_FromTheEnvironment0001", "plainkeyvalue", "Zq81mWp0XyT5rKc3", "LiteralQueryKey77",
		"Bearer literal-bearer-token-1234", "literal-bearer-token-1234"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets %q lack %q", got, want)
		}
	}
	for _, plain := range []string{"production", "/srv/data/with-digits-2024", "application/json", "plain-words-only-here", "json",
		"/home/agent-user", "/home/agent-user/data", "eu-west-1"} {
		if slices.Contains(got, plain) {
			t.Errorf("secrets %q hold the plain setting %q", got, plain)
		}
	}
}
