package main

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sandbox"
)

// Credentials shaped like real ones, so that an encoding of them would be
// unmistakable in any output.
const (
	abuseBotToken = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
	abuseAppToken = "xapp-1-A0123456789-1234567890123-0123456789abcdef0123456789abcdef"
	abuseAPIKey   = "sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp-AAAAAAAAAA_BBBBBBBBBB"
)

var abuseSecrets = []string{abuseBotToken, abuseAppToken, abuseAPIKey}

// abuseForms are the ways a secret could be smuggled out: verbatim,
// base64 (both alphabets, at each offset: the characters determined by
// the secret alone), hex and URL-encoded.
func abuseForms(secret string) []string {
	forms := []string{secret, hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret))), url.QueryEscape(secret)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := 0; k < 3; k++ {
			s := enc.EncodeToString(append(make([]byte, k), secret...))
			from, to := (8*k+5)/6, 8*(k+len(secret))/6
			forms = append(forms, s[from:to])
		}
	}
	return forms
}

// leak returns the form of a credential text holds, line breaks ignored
// (base64 and xxd wrap their output), or "".
func leak(text string) string {
	flat := strings.NewReplacer("\n", "", "\r", "", " ", "").Replace(text)
	for _, s := range abuseSecrets {
		for _, f := range abuseForms(s) {
			if strings.Contains(text, f) || strings.Contains(flat, f) {
				return f
			}
		}
	}
	return ""
}

// abuseHarness is a persona in bypass mode under AGENT_SANDBOX=required,
// with its credentials in $AGENT_HOME/.env as an operator keeps them, a
// database, and another thread's workspace with a file in it. The model
// runs, for a message "<@bot> <case>", the Bash command of that case and
// replies with its result.
func abuseHarness(t *testing.T, net string, commands map[string]string) *harness {
	t.Helper()
	if sandbox.LandlockABI() == 0 {
		t.Skip("the kernel has no Landlock: the abuse suite needs it (AGENT_SANDBOX=required)")
	}
	h := newHarness(t, rulesSoul)
	h.slack.BotToken, h.slack.AppToken = abuseBotToken, abuseAppToken
	h.env["CHAT_BOT_TOKEN"], h.env["CHAT_APP_TOKEN"] = abuseBotToken, abuseAppToken
	h.env["LLM_API_KEY"], h.model.Key = abuseAPIKey, abuseAPIKey
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	h.env["AGENT_SANDBOX"] = "required"
	h.env["AGENT_SANDBOX_NET"] = net
	h.env["PATH"] = os.Getenv("PATH")
	dotenv := fmt.Sprintf("CHAT_BOT_TOKEN=%s\nCHAT_APP_TOKEN=%s\nLLM_API_KEY=%s\n", abuseBotToken, abuseAppToken, abuseAPIKey)
	other := filepath.Join(h.home, "workspaces", "C0OTHER_1")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	for p, content := range map[string]string{
		filepath.Join(h.home, ".env"):       dotenv,
		filepath.Join(other, "private.txt"): "another thread's private notes",
	} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		if b := last[len(last)-1]; b.Type == "tool_result" {
			prev := msgs[len(msgs)-2].Content
			if use := prev[len(prev)-1]; use.Name == "Bash" {
				text := b.ResultText()
				if b.IsError {
					text = "ERROR " + text
				}
				n++
				return fake.ToolUse(fmt.Sprintf("toolu_r%d", n), "mcp__agent_chat__reply", map[string]string{"text": "RESULT " + text})
			}
			return fake.TextReply("")
		}
		// The user's text reaches the model as "<@U…> (role): <case>".
		fields := strings.Fields(heard(req))
		name := fields[len(fields)-1]
		command, ok := commands[name]
		if !ok {
			t.Errorf("no command for case %q", name)
		}
		n++
		// 8 s: a case must end well inside the harness's 15 s wait for its
		// reply. A fork bomb's shell retries a failed fork for up to 15 s
		// (bash sleeps 1, 2, 4, 8 s between tries), so on a slow machine the
		// bomb ends by this timeout, whose error still names the limit.
		return fake.ToolUse(fmt.Sprintf("toolu_b%d", n), "Bash", map[string]any{"command": command, "timeout": 8000})
	}
	return h
}

// run sends case name as a new thread in the trusted channel and returns
// the reply: the Bash result, "ERROR "-prefixed when it was a tool error.
func (h *harness) runCase(ts, name string) string {
	h.t.Helper()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: ts, Text: "<@U0BOT> " + name})
	p := h.expectReply("C0TEAM", ts, "RESULT ")
	return strings.TrimPrefix(p.Text, "RESULT ")
}

// assertNoLeak fails if a credential, in any encoding, reached a post, a
// model request or the logs.
func (h *harness) assertNoLeak() {
	h.t.Helper()
	for _, p := range append(h.slack.Posts(), h.slack.Updates()...) {
		if f := leak(p.Text + string(p.Blocks)); f != "" {
			h.t.Errorf("a post holds a credential (%q): %s", f, p.Text)
		}
	}
	for _, r := range h.model.Requests() {
		if f := leak(string(r.Body)); f != "" {
			h.t.Errorf("a model request holds a credential (%q)", f)
		}
	}
	if f := leak(h.logs.String()); f != "" {
		h.t.Errorf("the logs hold a credential (%q)", f)
	}
}

// The abuse suite: in a trusted thread, in bypass mode, every way of
// asking the shell for a credential runs and gets nothing secret.
func TestSandboxAbuse(t *testing.T) {
	home := "" // set below, once the harness exists
	cases := []struct {
		name, command string
		// want is a fragment of the result (the command ran and was
		// refused, or ran and printed this); errWant a tool error's.
		want, errWant string
		absent        []string
	}{
		{name: "parent-environ", command: "cat /proc/$PPID/environ", want: "Permission denied"},
		{name: "init-environ", command: "cat /proc/1/environ", want: "Permission denied"},
		{name: "own-environ-base64", command: "cat /proc/self/environ | base64 -w0", want: "Permission denied"},
		{name: "env-dump-base64", command: "env | base64; env | base64 | base64 -d | grep -c '^PATH='", want: "\n1"},
		{name: "env-dump-xxd", command: "env | xxd", want: "PATH"},
		{name: "dotenv", command: "cat HOME/.env", want: "Permission denied"},
		{name: "dotenv-relative", command: "cat ../../.env", want: "Permission denied"},
		{name: "dotenv-base64", command: "base64 HOME/.env", want: "Permission denied"},
		{name: "database", command: "cat HOME/db.sqlite | head -c 64", want: "Permission denied", absent: []string{"SQLite format"}},
		{name: "other-workspace", command: "cat ../C0OTHER_1/private.txt", want: "Permission denied", absent: []string{"private notes"}},
		{name: "list-home", command: "ls -a HOME", want: "Permission denied", absent: []string{"db.sqlite"}},
		{name: "symlink-to-dotenv", command: "ln -s HOME/.env e && cat e", want: "Permission denied"},
		{name: "hardlink-to-dotenv", command: "ln HOME/.env h && cat h", want: "exit status", absent: []string{"CHAT_BOT_TOKEN"}},
		{name: "write-outside", command: "echo pwned > HOME/SOUL.md; echo pwned > HOME/planted; echo pwned > /tmp/agent-planted-by-bash", want: "Permission denied"},
		{name: "fork-bomb", command: "bomb() { bomb | bomb & }; bomb; sleep 3; echo survived", errWant: "stopped by the sandbox"},
		{name: "huge-file", command: "dd if=/dev/zero of=big bs=1M count=1 seek=10240", errWant: "size limit"},
		{name: "after-abuse", command: "echo still-alive", want: "still-alive"},
	}
	commands := map[string]string{}
	h := abuseHarness(t, "allow", commands)
	home = h.home
	for _, c := range cases {
		commands[c.name] = strings.ReplaceAll(c.command, "HOME", home)
	}
	soulBefore, err := os.ReadFile(filepath.Join(home, "SOUL.md"))
	if err != nil {
		t.Fatal(err)
	}
	h.start()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := h.runCase(fmt.Sprintf("%d.1", 300+i), c.name)
			switch {
			case c.errWant != "":
				if !strings.HasPrefix(got, "ERROR ") || !strings.Contains(got, c.errWant) {
					t.Fatalf("want a tool error with %q, got %q", c.errWant, got)
				}
			case strings.HasPrefix(got, "ERROR "):
				t.Fatalf("the command did not run: %q", got)
			case !strings.Contains(got, c.want):
				t.Fatalf("result %q lacks %q", got, c.want)
			}
			for _, a := range c.absent {
				if strings.Contains(got, a) {
					t.Fatalf("result holds %q: %q", a, got)
				}
			}
			if f := leak(got); f != "" {
				t.Fatalf("result holds a credential (%q): %q", f, got)
			}
		})
	}
	h.assertNoLeak()
	if soul, _ := os.ReadFile(filepath.Join(home, "SOUL.md")); string(soul) != string(soulBefore) {
		t.Errorf("SOUL.md was overwritten: %q", soul)
	}
	for _, p := range []string{filepath.Join(home, "planted"), "/tmp/agent-planted-by-bash"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("a write outside the workspace landed: %s", p)
		}
	}
	if fi, err := os.Stat(filepath.Join(home, "workspaces", "C0TEAM_315.1", "big")); err == nil && fi.Size() > sandbox.DefaultFileSize {
		t.Errorf("the huge file grew to %d bytes", fi.Size())
	}
	if !strings.Contains(h.logs.String(), "sandbox: landlock abi") {
		t.Errorf("no sandbox startup line:\n%s", h.logs)
	}
	if v := h.metric(fmt.Sprintf(`agent_sandbox_info{landlock_abi="%d",mode="required",net="allow",pids="%s"}`, sandbox.LandlockABI(), pidsBound())); v != 1 {
		t.Errorf("agent_sandbox_info: %v", v)
	}
}

// pidsBound is what bounds a command's processes on this machine.
func pidsBound() string {
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeRequired})
	if err != nil {
		return "?"
	}
	return sb.Status().Pids
}

// Honest work still works in the sandbox: git, grep, a C build and run in
// the workspace, and (net allowed) an HTTP request; with
// AGENT_SANDBOX_NET=deny the same request is refused.
func TestSandboxHonestWork(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from the site")
	}))
	defer site.Close()
	type work struct{ name, command, want string }
	honest := []work{
		{"git", "git init -q repo && cd repo && echo hi > a.txt && git add a.txt && git -c user.name=A -c user.email=a@b commit -qm first && git log --oneline | wc -l", "1"},
		{"grep", "mkdir -p src && echo 'needle here' > src/x.txt && grep -rn needle src", "src/x.txt:1:needle here"},
		{"curl", "curl -sS " + site.URL, "hello from the site"},
	}
	if _, err := exec.LookPath("cc"); err == nil {
		honest = append(honest, work{"build", `printf '#include <stdio.h>\nint main(void){puts("built and ran");return 0;}\n' > m.c && cc -o m m.c && ./m`, "built and ran"})
	}
	commands := map[string]string{}
	for _, w := range honest {
		commands[w.name] = w.command
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on this machine")
	}
	t.Run("net allow", func(t *testing.T) {
		h := abuseHarness(t, "allow", commands)
		h.start()
		for i, w := range honest {
			got := h.runCase(fmt.Sprintf("%d.1", 400+i), w.name)
			if strings.HasPrefix(got, "ERROR ") || !strings.Contains(got, w.want) {
				t.Errorf("%s: %q, want %q", w.name, got, w.want)
			}
		}
		h.assertNoLeak()
	})
	t.Run("net deny", func(t *testing.T) {
		if sandbox.LandlockABI() < 4 {
			t.Skip("the kernel has no Landlock TCP rules (abi < 4)")
		}
		h := abuseHarness(t, "deny", commands)
		h.start()
		got := h.runCase("500.1", "curl")
		if strings.Contains(got, "hello from the site") || !strings.Contains(got, "exit status") {
			t.Errorf("curl with net deny: %q", got)
		}
		if !strings.Contains(h.logs.String(), "net deny") {
			t.Errorf("no net deny in the startup line:\n%s", h.logs)
		}
	})
}
