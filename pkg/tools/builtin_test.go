package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// btThread is the thread the builtin tests act for.
const (
	btChannel = "C0TEAM"
	btTS      = "1700000000.000100"
)

// btEnv is a temp home with skills/, knowledge/, a database file and the
// built-in tools acting for one thread.
type btEnv struct {
	home, ws, outside string
	b                 *tools.Builtins
	ctx               context.Context
	tools             map[string]tools.Tool
}

// newBtEnv builds a btEnv; edit adjusts the options before construction.
func newBtEnv(t *testing.T, edit func(*tools.BuiltinOptions)) *btEnv {
	t.Helper()
	home := t.TempDir()
	for _, d := range []string{"skills/s1", "knowledge/kb"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake.WriteFile(t, filepath.Join(home, "skills/s1/SKILL.md"), "---\nname: s1\n---\nskill body\n")
	fake.WriteFile(t, filepath.Join(home, "knowledge/kb/README.md"), "# KB\nknowledge body\n")
	fake.WriteFile(t, filepath.Join(home, "db.sqlite"), "SQLite format 3")
	fake.WriteFile(t, filepath.Join(home, ".env"), "CHAT_BOT_TOKEN=xoxb-secret\n")
	o := tools.BuiltinOptions{
		Home:       home,
		Workspaces: filepath.Join(home, "workspaces"),
		Deny:       []string{filepath.Join(home, "db.sqlite"), filepath.Join(home, ".env")},
	}
	if edit != nil {
		edit(&o)
	}
	b, err := tools.NewBuiltins(o)
	if err != nil {
		t.Fatal(err)
	}
	e := &btEnv{home: home, outside: t.TempDir(), b: b, tools: map[string]tools.Tool{}}
	e.ws, err = b.Workspace(pipeline.ThreadKey(btChannel, btTS))
	if err != nil {
		t.Fatal(err)
	}
	e.ctx = btCtx(t, btChannel, btTS)
	for _, tl := range b.Tools() {
		e.tools[tl.Name] = tl
	}
	return e
}

// btCtx is a context carrying a turn of the thread channel/ts.
func btCtx(t *testing.T, channel, ts string) context.Context {
	return tools.NewContextWithTurn(t.Context(), &pipeline.Turn{Event: &pipeline.Event{ChannelID: channel, TS: ts}})
}

// call runs a tool for the env's thread.
func (e *btEnv) call(t *testing.T, name string, input any) tools.Result {
	t.Helper()
	return e.callCtx(t, e.ctx, name, input)
}

// callCtx runs a tool with ctx.
func (e *btEnv) callCtx(t *testing.T, ctx context.Context, name string, input any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := e.tools[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	res, err := tl.Call(ctx, raw)
	if err != nil {
		t.Fatalf("%s: runtime error %v", name, err)
	}
	if res.IsError && strings.Contains(res.Text, "\n") {
		t.Errorf("%s: error result is not one line: %q", name, res.Text)
	}
	return res
}

func TestBuiltinsToolsAndSchemas(t *testing.T) {
	e := newBtEnv(t, nil)
	want := map[string][]string{
		"Read":  {"file_path", "offset", "limit"},
		"Write": {"file_path", "content"},
		"Edit":  {"file_path", "old_string", "new_string", "replace_all"},
		"Grep":  {"pattern", "path", "glob"},
		"Glob":  {"pattern", "path"},
		"LS":    {"path"},
		"Bash":  {"command", "timeout"},
	}
	if len(e.tools) != len(want) {
		t.Errorf("Tools() = %d tools, want %d", len(e.tools), len(want))
	}
	reg := tools.NewRegistry()
	reg.Add(e.b.Tools()...) // panics on an incomplete tool
	for name, fields := range want {
		t.Run(name, func(t *testing.T) {
			tl, ok := e.tools[name]
			if !ok {
				t.Fatal("missing")
			}
			var s struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal(tl.Schema, &s); err != nil || s.Type != "object" {
				t.Fatalf("schema %s: %v", tl.Schema, err)
			}
			for _, f := range fields {
				if _, ok := s.Properties[f]; !ok {
					t.Errorf("no property %q", f)
				}
			}
			for _, r := range s.Required {
				if _, ok := s.Properties[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
			if tools.KindOf(name) == tools.KindExec && name != "Bash" {
				t.Errorf("KindOf(%s) = exec: permission.go does not know it", name)
			}
		})
	}
}

func TestNewBuiltinsRefusesBadConfig(t *testing.T) {
	home := t.TempDir()
	for name, o := range map[string]tools.BuiltinOptions{
		"no home":       {},
		"long timeout":  {Home: home, BashTimeout: 11 * time.Minute},
		"negative cap":  {Home: home, MaxOutput: -1},
		"relative deny": {Home: home, Deny: []string{"db.sqlite"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := tools.NewBuiltins(o); err == nil {
				t.Error("NewBuiltins succeeded")
			}
		})
	}
	if _, err := tools.NewBuiltins(tools.BuiltinOptions{Home: home}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(home, "workspaces")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("default workspaces dir: %v, %v", fi, err)
	}
}

func TestWorkspaceNames(t *testing.T) {
	e := newBtEnv(t, nil)
	if got := filepath.Base(e.ws); got != "C0TEAM_1700000000.000100" {
		t.Errorf("workspace = %s", got)
	}
	if fi, err := os.Stat(e.ws); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("workspace mode: %v, %v", fi, err)
	}
	seen := map[string]string{}
	for _, key := range []string{"C1:2", "C1_2", "../../etc:x", "..:..", "a/b:c", ".:.", "C1:2:3", "C1:2_3", "C1_2:3"} {
		ws, err := e.b.Workspace(key)
		if err != nil {
			t.Errorf("Workspace(%q): %v", key, err)
			continue
		}
		if filepath.Dir(ws) != filepath.Dir(e.ws) {
			t.Errorf("Workspace(%q) = %s, not directly under the workspaces dir", key, ws)
		}
		if other, dup := seen[ws]; dup {
			t.Errorf("Workspace(%q) = Workspace(%q) = %s", key, other, ws)
		}
		seen[ws] = key
	}
	if _, err := e.b.Workspace(""); err == nil {
		t.Error("Workspace(\"\") succeeded")
	}
}

// A symlink planted where a workspace would be is not followed.
func TestWorkspaceRefusesSymlink(t *testing.T) {
	e := newBtEnv(t, nil)
	if err := os.Symlink(e.outside, filepath.Join(filepath.Dir(e.ws), "C9_1")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.Workspace("C9:1"); err == nil {
		t.Error("Workspace followed a symlink")
	}
}

func TestThreadIsolation(t *testing.T) {
	e := newBtEnv(t, nil)
	other := btCtx(t, "C0OTHER", "1700000001.000200")
	if res := e.call(t, "Write", map[string]any{"file_path": "mine.txt", "content": "A"}); res.IsError {
		t.Fatal(res.Text)
	}
	if res := e.callCtx(t, other, "Read", map[string]any{"file_path": "mine.txt"}); !res.IsError || !strings.Contains(res.Text, "does not exist") {
		t.Errorf("other thread read a relative path of the first: %+v", res)
	}
	if res := e.callCtx(t, other, "Read", map[string]any{"file_path": filepath.Join(e.ws, "mine.txt")}); !res.IsError || !strings.Contains(res.Text, "outside the allowed folders") {
		t.Errorf("other thread read the first's workspace: %+v", res)
	}
	wsOther, _ := e.b.Workspace(pipeline.ThreadKey("C0OTHER", "1700000001.000200"))
	if wsOther == e.ws {
		t.Error("two threads share a workspace")
	}
}

func TestBuiltinsNeedATurn(t *testing.T) {
	e := newBtEnv(t, nil)
	inputs := map[string]any{
		"Read": map[string]any{"file_path": "a"}, "Write": map[string]any{"file_path": "a", "content": ""},
		"Edit": map[string]any{"file_path": "a", "old_string": "x", "new_string": "y"},
		"Grep": map[string]any{"pattern": "x"}, "Glob": map[string]any{"pattern": "*"},
		"LS": map[string]any{}, "Bash": map[string]any{"command": "true"},
	}
	for name, in := range inputs {
		if res := e.callCtx(t, t.Context(), name, in); !res.IsError || !strings.Contains(res.Text, "no chat thread") {
			t.Errorf("%s without a turn: %+v", name, res)
		}
		if res := e.call(t, name, "not an object"); !res.IsError || !strings.Contains(res.Text, "invalid input") {
			t.Errorf("%s with a bad input: %+v", name, res)
		}
	}
}

// Every result is scrubbed of the secrets, whatever the tool.
func TestBuiltinsScrubSecrets(t *testing.T) {
	const token = "xoxb-1234-abcdef"
	e := newBtEnv(t, func(o *tools.BuiltinOptions) { o.Secrets = []string{token, ""} })
	fake.WriteFile(t, filepath.Join(e.ws, "leak-"+token+".txt"), "token: "+token+"\n")
	for _, c := range []struct {
		tool  string
		input map[string]any
	}{
		{"Read", map[string]any{"file_path": "leak-" + token + ".txt"}},
		{"Grep", map[string]any{"pattern": "token"}},
		{"Glob", map[string]any{"pattern": "*.txt"}},
		{"LS", map[string]any{}},
	} {
		res := e.call(t, c.tool, c.input)
		if strings.Contains(res.Text, token) || !strings.Contains(res.Text, "[redacted]") {
			t.Errorf("%s: %q", c.tool, res.Text)
		}
	}
}
