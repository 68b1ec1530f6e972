package main

import (
	"os"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// The abuse suite, credentials on the command line: a token given as a
// flag sits in the process list, the shell's history and pprof's
// /debug/pprof/cmdline, where a command the agent ran once fetched it over
// loopback. No command takes one, and the profiles never show the command
// line.

// Every command refuses a credential given as a flag, in each of the flag
// package's forms, with one line naming the variable to set instead and
// without quoting the value; a database address without a password stays
// a flag.
func TestAbuseCredentialFlags(t *testing.T) {
	const token = "xoxb-1111-2222-flagtokenvalue"
	for _, tt := range []struct {
		args []string
		env  string
	}{
		{[]string{"start", "--chat-bot-token", token}, "CHAT_BOT_TOKEN"},
		{[]string{"start", "--chat-bot-token=" + token}, "CHAT_BOT_TOKEN"},
		{[]string{"start", "-chat-bot-token", token}, "CHAT_BOT_TOKEN"},
		{[]string{"dev", "--chat-app-token", "xapp-1-" + token}, "CHAT_APP_TOKEN"},
		{[]string{"doctor", "--llm-api-key=sk-ant-" + token}, "LLM_API_KEY"},
		{[]string{"doctor", "--llm-oauth-token", "sk-ant-oat-" + token}, "LLM_OAUTH_TOKEN"},
		{[]string{"start", "--chat-signing-secret", token}, "CHAT_SIGNING_SECRET"},
		{[]string{"inbox", "--db-url", "postgres://agent:" + token + "@db:5432/agent"}, "AGENT_DB_URL"},
		{[]string{"validate-soul", "--chat-bot-token", token}, "CHAT_BOT_TOKEN"},
		{[]string{"sim", "run", "--llm-api-key", token}, "LLM_API_KEY"},
	} {
		t.Run(tt.args[0]+" "+tt.env, func(t *testing.T) {
			env := map[string]string{"AGENT_HOME": t.TempDir(), "AGENT_HEALTH_PORT": "0"}
			stdout, stderr, code := runCLI(t, env, tt.args...)
			want := "pass " + tt.env + " in the environment or .env, not as a flag\n"
			if code != 2 || stderr != want {
				t.Fatalf("%q: exit %d, stderr %q, want 2 and %q", tt.args, code, stderr, want)
			}
			if strings.Contains(stdout+stderr, token) {
				t.Fatalf("the value is echoed: %q %q", stdout, stderr)
			}
		})
	}
	// A database address without a password is no credential.
	_, stderr, _ := runCLI(t, map[string]string{"AGENT_HOME": t.TempDir()}, "inbox", "--db-url", "postgres://agent@127.0.0.1:1/agent")
	if strings.Contains(stderr, "not as a flag") {
		t.Fatalf("a password-less database address was refused: %q", stderr)
	}
}

// With AGENT_PPROF=1 the profiles are served, but not the command line:
// /debug/pprof/cmdline and expvar's /debug/vars answer 404 and show
// neither the process's arguments nor a credential.
func TestAbusePprofShowsNoCommandLine(t *testing.T) {
	h := newHarness(t, testSoul)
	h.env["AGENT_PPROF"] = "1"
	h.start()
	secrets := []string{fake.DefaultBotToken, fake.DefaultAppToken, h.env["LLM_API_KEY"]}
	for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/cmdline?debug=1", "/debug/vars", "/debug/pprof/vars"} {
		code, body := h.get(path)
		if code != 404 {
			t.Errorf("GET %s answered %d, want 404", path, code)
		}
		for _, s := range append(secrets, os.Args...) {
			if s != "" && strings.Contains(body, s) {
				t.Errorf("GET %s shows %q:\n%s", path, s, body)
			}
		}
		if strings.Contains(body, "cmdline") || strings.Contains(body, "memstats") {
			t.Errorf("GET %s shows expvar's variables:\n%s", path, body)
		}
	}
	for path, want := range map[string]string{
		"/debug/pprof/":                  "heap",
		"/debug/pprof/heap?debug=1":      "heap profile",
		"/debug/pprof/goroutine?debug=1": "goroutine profile",
	} {
		if code, body := h.get(path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s answered %d, body lacks %q", path, code, want)
		}
	}
}
