package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sandbox"
)

// doctorEnv is the environment of `agent doctor` against the fakes.
func doctorEnv(t *testing.T, slack *fake.Slack, model *fake.Anthropic) map[string]string {
	t.Helper()
	model.Key = "sk-ant-api03-doctor-key-000000000"
	return map[string]string{
		"CHAT_BOT_TOKEN": fake.DefaultBotToken, "CHAT_APP_TOKEN": fake.DefaultAppToken, "CHAT_API_URL": slack.URL(),
		"LLM_API_KEY": model.Key, "LLM_BASE_URL": model.URL(), "AGENT_MODEL": "claude-test", "AGENT_HOME": t.TempDir(),
	}
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

// Each diagnosis by its exact text, against the fakes.
func TestDoctorNamesWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(env map[string]string, slack *fake.Slack, model *fake.Anthropic)
		line  string // the FAIL line
	}{
		{"swapped tokens", func(env map[string]string, _ *fake.Slack, _ *fake.Anthropic) {
			env["CHAT_BOT_TOKEN"], env["CHAT_APP_TOKEN"] = env["CHAT_APP_TOKEN"], env["CHAT_BOT_TOKEN"]
		}, "FAIL  CHAT_BOT_TOKEN looks like an app-level token (xapp-…) and CHAT_APP_TOKEN like a bot token (xoxb-…): the two are swapped"},
		{"app token as bot token", func(env map[string]string, _ *fake.Slack, _ *fake.Anthropic) {
			env["CHAT_BOT_TOKEN"] = "xapp-1-A0APP-123-abc"
		}, "FAIL  CHAT_BOT_TOKEN looks like an app-level token (xapp-…): set it to the Bot User OAuth Token (xoxb-…) of OAuth & Permissions"},
		{"missing scopes", func(_ map[string]string, slack *fake.Slack, _ *fake.Anthropic) {
			slack.Scopes = without(botScopes, "chat:write", "im:history")
		}, "FAIL  CHAT_BOT_TOKEN lacks the scopes chat:write, im:history: add them to the app (`agent manifest` prints its manifest) and reinstall it to the workspace"},
		{"the read tools' scopes", func(_ map[string]string, slack *fake.Slack, _ *fake.Anthropic) {
			slack.Scopes = without(botScopes, "channels:read", "reactions:write")
		}, "FAIL  CHAT_BOT_TOKEN lacks the scopes channels:read, reactions:write: add them to the app (`agent manifest` prints its manifest) and reinstall it to the workspace"},
		{"home tab off", func(_ map[string]string, slack *fake.Slack, _ *fake.Anthropic) {
			slack.Errors = map[string]string{"views.publish": "not_enabled"}
		}, "FAIL  the Home tab is off: turn it on in the app's settings (App Home → Home Tab; `agent manifest` has features.app_home.home_tab_enabled)"},
		{"bot token refused", func(_ map[string]string, slack *fake.Slack, _ *fake.Anthropic) {
			slack.BotToken = "xoxb-another-token"
		}, "FAIL  CHAT_BOT_TOKEN is not accepted by the platform (auth.test: invalid_auth): copy the Bot User OAuth Token (xoxb-…) of OAuth & Permissions again, or reinstall the app"},
		{"app token without connections:write", func(_ map[string]string, slack *fake.Slack, _ *fake.Anthropic) {
			slack.Errors = map[string]string{"apps.connections.open": "missing_scope"}
		}, "FAIL  CHAT_APP_TOKEN lacks the connections:write scope: create an app-level token with it (Basic Information → App-Level Tokens)"},
		{"socket mode off", func(_ map[string]string, slack *fake.Slack, _ *fake.Anthropic) {
			slack.Errors = map[string]string{"apps.connections.open": "socket_mode_disabled"}
		}, "FAIL  CHAT_APP_TOKEN cannot open a socket (apps.connections.open: socket_mode_disabled): turn Socket Mode on in the app's settings, and give the app-level token connections:write"},
		{"model key refused", func(env map[string]string, _ *fake.Slack, _ *fake.Anthropic) {
			env["LLM_API_KEY"] = "sk-ant-api03-wrong-key-0000000000"
		}, "FAIL  LLM_API_KEY is refused by the model provider (401 authentication_error): set a valid key"},
		{"database not writable", func(env map[string]string, _ *fake.Slack, _ *fake.Anthropic) {
			file := filepath.Join(env["AGENT_HOME"], "a-file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			env["AGENT_DB_PATH"] = filepath.Join(file, "db.sqlite")
		}, "FAIL  AGENT_DB_PATH " + "%HOME%/a-file/db.sqlite: its folder cannot be made (not a directory)"},
		{"postgres unreachable", func(env map[string]string, _ *fake.Slack, _ *fake.Anthropic) {
			env["AGENT_DB_URL"] = "postgres://agent:pg-pass@127.0.0.1:1/agent?sslmode=disable"
		}, "FAIL  AGENT_DB_URL postgres://agent:xxxxx@127.0.0.1:1/agent?sslmode=disable does not answer (%ERR%): check the address, the password and the network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slack, model := fake.NewSlack(t), fake.NewAnthropic(t)
			slack.Scopes = botScopes
			env := doctorEnv(t, slack, model)
			tc.setup(env, slack, model)
			stdout, stderr, code := runCLI(t, env, "doctor")
			want := strings.ReplaceAll(tc.line, "%HOME%", env["AGENT_HOME"])
			lines := strings.Split(stdout, "\n")
			if before, after, ok := strings.Cut(want, "%ERR%"); ok {
				// The driver's words for a refused connection vary: match around them.
				for _, l := range lines {
					if strings.HasPrefix(l, before) && strings.HasSuffix(l, after) {
						want = l
					}
				}
				if strings.Contains(stdout, "pg-pass") {
					t.Errorf("the database password is printed:\n%s", stdout)
				}
			}
			if code != 1 || !slices.Contains(lines, want) {
				t.Fatalf("exit %d, want 1 and the line\n%s\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
			}
			if n := strings.Count(stdout, "FAIL"); n != 1 {
				t.Errorf("%d FAIL lines, want 1:\n%s", n, stdout)
			}
		})
	}
}

func TestDoctorPassesAndStartChecksFirst(t *testing.T) {
	slack, model := fake.NewSlack(t), fake.NewAnthropic(t)
	slack.Scopes = botScopes
	env := doctorEnv(t, slack, model)
	stdout, stderr, code := runCLI(t, env, "doctor")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	want := []string{
		"ok    CHAT_BOT_TOKEN: bot U0BOT in workspace T0TEAM",
		"ok    CHAT_APP_TOKEN: socket mode on",
		"ok    LLM_API_KEY: accepted by the model provider",
		"ok    AGENT_DB_PATH " + filepath.Join(env["AGENT_HOME"], "db.sqlite") + ": writable (not created yet)",
	}
	if abi := sandbox.LandlockABI(); abi > 0 {
		want = append(want, fmt.Sprintf("ok    sandbox: landlock abi %d, net allowlist", abi))
	}
	if got := strings.Split(strings.TrimSpace(stdout), "\n"); !slices.Equal(got, want) {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, strings.Join(want, "\n"))
	}
	if model.ModelsCalls() != 1 || len(model.Requests()) != 0 {
		t.Errorf("model calls: %d models list, %d messages; want one list and no message", model.ModelsCalls(), len(model.Requests()))
	}

	// `agent start` runs the same checks before it connects: a refused
	// token stops it, one line; a missing scope is a warning (it disables
	// a feature, not the bot).
	if err := os.WriteFile(filepath.Join(env["AGENT_HOME"], "SOUL.md"), []byte(testSoul), 0o600); err != nil {
		t.Fatal(err)
	}
	env["AGENT_HEALTH_PORT"] = "0"
	env["LLM_API_KEY"] = "sk-ant-api03-wrong-key-0000000000"
	_, stderr, code = runCLI(t, env, "start")
	if code != 1 || !strings.Contains(stderr, "LLM_API_KEY is refused by the model provider (401 authentication_error)") {
		t.Fatalf("start: exit %d, stderr:\n%s", code, stderr)
	}
	if slack.Connections() != 0 {
		t.Error("start connected despite a failed check")
	}
	env["LLM_API_KEY"] = model.Key
	slack.Scopes = without(botScopes, "commands")
	ctx, cancel := context.WithCancel(context.Background())
	var logs fake.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"start"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &logs)
	}()
	if !fake.Eventually(10*time.Second, func() bool {
		return strings.Contains(logs.String(), "CHAT_BOT_TOKEN lacks the scopes commands") && slack.Connections() > 0
	}) {
		cancel()
		t.Fatalf("no warning, or no start:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("start: %v", err)
	}
}

// A mistyped command or flag is an error (exit 2), not the help with exit 0.
func TestUnknownCommandsAndFlagsFail(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"strat"}, `unknown command "strat" (did you mean "start"?); see agent --help`},
		{[]string{"doctr"}, `unknown command "doctr" (did you mean "doctor"?)`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"; see agent --help`},
		{[]string{"start", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{nil, "no command given"},
	} {
		_, stderr, code := runCLI(t, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("agent %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, _, code := runCLI(t, nil, "--help"); code != 0 {
		t.Errorf("agent --help: exit %d, want 0", code)
	}
}

// doctor says the network of sandboxed commands as the start does: under
// the default, `net allowlist` where the kernel gives namespaces.
func TestDoctorSaysTheNetwork(t *testing.T) {
	abi := sandbox.LandlockABI()
	if abi == 0 {
		t.Skip("the kernel has no Landlock")
	}
	env := doctorEnv(t, fake.NewSlack(t), fake.NewAnthropic(t))
	stdout, _, _ := runCLI(t, env, "doctor")
	if want := fmt.Sprintf("sandbox: landlock abi %d, net allowlist", abi); !strings.Contains(stdout, want) {
		t.Fatalf("doctor does not say %q:\n%s", want, stdout)
	}
	env["AGENT_SANDBOX_NET"] = "deny"
	if stdout, _, _ = runCLI(t, env, "doctor"); !strings.Contains(stdout, fmt.Sprintf("sandbox: landlock abi %d, net deny", abi)) {
		t.Fatalf("doctor under deny:\n%s", stdout)
	}
}
