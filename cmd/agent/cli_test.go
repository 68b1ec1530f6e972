package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/fake/golden"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/pkg/persona"
)

// runCLI runs the binary's run with env and returns stdout, stderr and the
// exit code main would use.
func runCLI(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["HOME"]; !ok {
		env["HOME"] = t.TempDir()
	}
	return runCLIWith(&cli{getenv: func(k string) string { return env[k] }, args: args})
}

// runCLIWith runs c as runCLI does, on c's getenv, args and test fields,
// with stdin empty and stdout and stderr captured.
func runCLIWith(c *cli) (string, string, int) {
	var out, errb bytes.Buffer
	c.streams = streams{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	err := c.run(context.Background())
	code := 0
	if err != nil {
		code = exitCode(err)
		var q quietError
		if !strings.Contains(errb.String(), err.Error()) && !asQuiet(err, &q) {
			errb.WriteString(err.Error() + "\n") // what main prints
		}
	}
	return out.String(), errb.String(), code
}

func asQuiet(err error, q *quietError) bool {
	v, ok := err.(quietError)
	if ok {
		*q = v
	}
	return ok
}

func TestStartupErrors(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"CHAT_BOT_TOKEN": "xoxb-1", "CHAT_APP_TOKEN": "xapp-1", "LLM_API_KEY": "k", "AGENT_HOME": t.TempDir()}
	}
	cases := []struct {
		name  string
		unset string
		want  string
	}{
		{"bot token", "CHAT_BOT_TOKEN", "missing env CHAT_BOT_TOKEN"},
		{"app token", "CHAT_APP_TOKEN", "missing env CHAT_APP_TOKEN"},
		{"auth", "LLM_API_KEY", "missing auth: set LLM_API_KEY or LLM_OAUTH_TOKEN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := base()
			delete(env, tc.unset)
			_, stderr, code := runCLI(t, env, "start")
			if code == 0 || strings.TrimSpace(stderr) != tc.want {
				t.Fatalf("exit %d, stderr %q, want %q", code, stderr, tc.want)
			}
		})
	}
}

func TestStartInvalidAuth(t *testing.T) {
	slack := fake.NewSlack(t)
	slack.AuthError = "invalid_auth"
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "SOUL.md"), []byte(testSoul), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CHAT_BOT_TOKEN": fake.DefaultBotToken, "CHAT_APP_TOKEN": fake.DefaultAppToken,
		"CHAT_API_URL": slack.URL(), "LLM_API_KEY": "k", "AGENT_HOME": home, "AGENT_HEALTH_PORT": "0"}
	_, stderr, code := runCLI(t, env, "start")
	if code == 0 || !strings.Contains(stderr, "invalid_auth") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestStartSeedsScaffold(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"CHAT_BOT_TOKEN": "xoxb-1", "CHAT_APP_TOKEN": "xapp-1", "LLM_API_KEY": "k",
		"AGENT_HOME": home, "AGENT_HEALTH_PORT": "0"}
	_, stderr, code := runCLI(t, env, "start")
	if code == 0 || !strings.Contains(stderr, "missing required fields: identity.name, manager.userId, mandate") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(home, "SOUL.md")); err != nil {
		t.Fatalf("no scaffold seeded: %v", err)
	}
	// The seeded scaffold is what validate-soul reads, and it fails the
	// same way until it is filled in.
	_, _, code = runCLI(t, map[string]string{"AGENT_HOME": home}, "validate-soul")
	if code != 1 {
		t.Fatalf("validate-soul on the scaffold: exit %d, want 1", code)
	}
}

func TestValidateSoul(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return fake.WriteFile(t, filepath.Join(dir, name), body) }
	good := write("good.md", testSoul)
	noManager := write("nomgr.md", strings.Replace(testSoul, "- Manager: U0MGR", "- Manager: @alice", 1))
	badRegex := write("regex.md", testSoul+"\n## Redaction\n- ([a-z ; broken\n")
	cases := []struct {
		name       string
		args       []string
		code       int
		out, errIn string
	}{
		{"valid", []string{"validate-soul", "--soul", good}, 0, "Testbot", "anyone in the workspace can DM the persona"},
		{"missing field", []string{"validate-soul", "--soul", noManager}, 1, "", "missing required fields: manager.userId"},
		{"handle warning", []string{"validate-soul", "--soul", noManager}, 1, "", "DMs will not be answered"},
		{"missing file", []string{"validate-soul", "--soul", filepath.Join(dir, "none.md")}, 2, "", "read SOUL.md"},
		{"invalid regex names the line", []string{"validate-soul", "--soul", badRegex}, 2, "", "regex.md:15: invalid redaction regex"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, nil, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(stderr, tc.errIn) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out, stderr)
			}
		})
	}
}

func TestManifest(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "SOUL.md"), []byte(testSoul), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, map[string]string{"AGENT_HOME": home}, "manifest")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var m struct {
		Display  struct{ Name string } `json:"display_information"`
		Features struct {
			SlashCommands []struct{ Command string } `json:"slash_commands"`
			AgentView     struct {
				Description string `json:"agent_description"`
			} `json:"agent_view"`
		}
		OAuth struct {
			Scopes struct{ Bot []string }
		} `json:"oauth_config"`
		Settings struct {
			Events struct {
				BotEvents []string `json:"bot_events"`
			} `json:"event_subscriptions"`
			Interactivity struct {
				IsEnabled bool `json:"is_enabled"`
			}
			SocketMode bool `json:"socket_mode_enabled"`
		}
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if m.Display.Name != "Testbot" || !m.Settings.SocketMode || !m.Settings.Interactivity.IsEnabled {
		t.Fatalf("manifest %+v", m)
	}
	has := func(list []string, want ...string) {
		t.Helper()
		set := map[string]bool{}
		for _, s := range list {
			set[s] = true
		}
		for _, w := range want {
			if !set[w] {
				t.Errorf("manifest lacks %q", w)
			}
		}
	}
	// The platform's agent view: its stop button and the DM's opening.
	if m.Features.AgentView.Description == "" {
		t.Error("manifest lacks features.agent_view.agent_description")
	}
	has(m.Settings.Events.BotEvents, "agent_session_stopped", "app_home_opened")
	has(m.OAuth.Scopes.Bot, "app_mentions:read", "chat:write", "im:history", "im:read", "im:write", "channels:history",
		"groups:history", "files:write", "assistant:write", "users:read", "commands",
		"channels:read", "groups:read", "mpim:read", "reactions:write") // the read tools and reactions
	has(m.Settings.Events.BotEvents, "app_mention", "message.im", "message.channels", "message.groups", "assistant_thread_started")
	var cmds []string
	for _, c := range m.Features.SlashCommands {
		cmds = append(cmds, c.Command)
	}
	has(cmds, "/ingest", "/1on1")
}

func TestVersion(t *testing.T) {
	out, _, code := runCLI(t, nil, "version")
	if code != 0 || out != "agent v"+service.Version+"\n" {
		t.Fatalf("exit %d out %q", code, out)
	}
}

// The .env files are read at most once per run, not once per command:
// LoadEnv asks for HOME once. `agent --help` builds every command (each
// registering its settings' flags) and reads them once; `agent version`
// builds its own command alone, which reads no setting, and reads none.
func TestEnvReadOncePerRun(t *testing.T) {
	for args, want := range map[string]int{"--help": 1, "version": 0} {
		home := t.TempDir()
		homes := 0
		getenv := func(k string) string {
			if k == "HOME" {
				homes++
				return home
			}
			return ""
		}
		var out bytes.Buffer
		err := run(t.Context(), strings.Fields(args), getenv, strings.NewReader(""), &out, &out)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("agent %s: %v", args, err)
		}
		if homes != want {
			t.Errorf("HOME read %d times for `agent %s`, want %d", homes, args, want)
		}
	}
}

func TestValidateSoulWithModelExtraction(t *testing.T) {
	prose := strings.Replace(testSoul, "## Reporting\n- Manager: U0MGR\n", "## About\nI report to Mia (U0MIA), who runs releases.\n", 1)
	path := filepath.Join(t.TempDir(), "SOUL.md")
	if err := os.WriteFile(path, []byte(prose), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(model *fake.Anthropic) map[string]string {
		return map[string]string{"AGENT_SOUL_EXTRACT": "model", "LLM_API_KEY": "sk-test", "LLM_BASE_URL": model.URL(), "AGENT_MODEL": "m"}
	}

	// Without the opt-in, no model: the manager is missing.
	if _, stderr, code := runCLI(t, nil, "validate-soul", "--soul", path); code != 1 || !strings.Contains(stderr, "manager.userId") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// With it, the model fills the manager from the prose.
	model := fake.NewAnthropic(t)
	model.Enqueue(fake.TextReply(`{"manager":{"userId":"U0MIA"}}`))
	out, stderr, code := runCLI(t, env(model), "validate-soul", "--soul", path)
	if code != 0 || !strings.Contains(out, "U0MIA") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	// An id that is not in the file is refused: a load failure.
	model2 := fake.NewAnthropic(t)
	model2.Enqueue(fake.TextReply(`{"manager":{"userId":"U0EVE"}}`))
	if _, stderr, code := runCLI(t, env(model2), "validate-soul", "--soul", path); code != 2 || !strings.Contains(stderr, "U0EVE") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

func TestPersonaCacheHitOnSecondBoot(t *testing.T) {
	h := newHarness(t, testSoul)
	h.start()
	h.waitLog("soul cache miss")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	before := strings.Count(h.logs.String(), "soul cache miss")
	h.start()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if after := strings.Count(h.logs.String(), "soul cache miss"); after != before {
		t.Fatalf("second boot missed the cache (%d misses, want %d)", after, before)
	}
}

func TestManifestIgnoresAPlaceholderName(t *testing.T) {
	home := t.TempDir()
	if _, err := persona.Seed(home); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, map[string]string{"AGENT_HOME": home}, "manifest")
	if code != 0 || !strings.Contains(out, `"name": "Agent"`) || strings.Contains(out, "REPLACE_ME") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// TestManifestGolden keeps the manifest of each ingress mode as a reviewed
// file: what an operator pastes into the platform's app settings.
func TestManifestGolden(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "SOUL.md"), []byte(testSoul), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ golden, http string }{
		{"manifest.socket.golden", ""},
		{"manifest.http.golden", "https://agent.example.com/"},
	} {
		args := []string{"manifest"}
		if tc.http != "" {
			args = append(args, "--http", tc.http)
		}
		out, errOut, code := runCLI(t, map[string]string{"AGENT_HOME": home}, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		golden.Check(t, filepath.Join("testdata", tc.golden), []byte(out))
	}
	for _, bad := range []string{"http://agent.example.com", "agent.example.com", "https://", "https://a.example.com/?x=1"} {
		_, errOut, code := runCLI(t, map[string]string{"AGENT_HOME": home}, "manifest", "--http", bad)
		if code == 0 || !strings.Contains(errOut, "--http") {
			t.Errorf("--http %s: exit %d, stderr %q", bad, code, errOut)
		}
	}
}
