package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// recordThread runs a thread through the real service: a member asks for
// a deploy in the team's channel, the persona asks a card, the approver
// approves, the persona replies; then a second message, whose answer
// carries a credential (the model's own words, stored as they came) and
// the operator's pattern. It returns the harness (stopped) and the
// thread's channel and root.
func recordThread(t *testing.T, dbURL string) (*harness, string, string) {
	h := newHarness(t, rulesSoul)
	if dbURL != "" {
		h.env["AGENT_DB_URL"] = dbURL
	}
	key := h.env["LLM_API_KEY"]
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		b := last[len(last)-1]
		switch {
		case b.Type != "tool_result" && strings.Contains(heard(req), "deploy"):
			return fake.ToolUse("toolu_ask", "mcp__agent_chat__request_approval", map[string]string{"category": "deploy", "summary": "deploy prod"})
		case b.Type != "tool_result":
			return fake.ToolUse("toolu_done", "mcp__agent_chat__reply", map[string]string{"text": "**All done**: account ACME-123456 uses key " + key})
		case b.ToolUseID == "toolu_ask":
			return fake.ToolUse("toolu_say", "mcp__agent_chat__reply", map[string]string{"text": "deploying now, " + b.ResultText()})
		}
		return fake.TextReply("")
	}
	h.start()
	const ch, root = "C0TEAM", "100.1"
	h.send(fake.Message{User: "U0ALICE", Channel: ch, TS: root, Text: "<@U0BOT> please deploy"})
	card, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return len(p.Blocks) > 0 })
	if err != nil {
		t.Fatalf("no card: %v", err)
	}
	h.click("U0APP", card, "approve")
	h.expectNotice(ch, root, "deploying now, approved by <@U0APP>")
	h.send(fake.Message{User: "U0ALICE", Channel: ch, TS: "100.5", ThreadTS: root, Text: "thanks, anything else?"})
	h.expectNotice(ch, root, "*All done*: account [redacted: acme account number] uses key [redacted: credential]")
	h.waitMetric(`agent_turns_total{outcome="ok"}`, 2)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	return h, ch, root
}

// A stored thread becomes a scenario that sim run passes on the same code
// (its golden transcript written by --update), with no secret of the
// thread in the file and the people by their own ids; the same scenario
// fails when the service behaves otherwise (the approver is no longer
// one), and when the recorded answer is not what the service posts.
func TestSimRecordReplays(t *testing.T) { testSimRecordReplays(t, "") }

// The same on Postgres: the recording reads the store on either backend.
func TestSimRecordReplaysPostgres(t *testing.T) {
	base := os.Getenv("AGENT_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("needs AGENT_TEST_POSTGRES_URL: .ci/run starts a PostgreSQL for it")
	}
	testSimRecordReplays(t, freshDatabase(t, base))
}

func testSimRecordReplays(t *testing.T, dbURL string) {
	h, ch, root := recordThread(t, dbURL)
	out := filepath.Join(t.TempDir(), "recorded.yaml")
	stdout, errs, code := h.runCLI("sim", "record", "--out", out, "--update", ch, root)
	if code != 0 {
		t.Fatalf("sim record: exit %d\n%s%s", code, stdout, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	file := string(b)
	t.Logf("scenario:\n%s", file)
	for _, secret := range []string{h.env["LLM_API_KEY"], "ACME-123456", fake.DefaultBotToken} {
		if strings.Contains(file, secret) {
			t.Errorf("the scenario holds %q:\n%s", secret, file)
		}
	}
	for _, want := range []string{"as: U0ALICE", "click: {action: approve, as: U0APP}", "expect_card: {kind: approval, contains: deploy prod}",
		"name: mcp__agent_chat__request_approval", "[redacted: credential]"} {
		if !strings.Contains(file, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, file)
		}
	}
	if _, err := os.Stat(strings.TrimSuffix(out, ".yaml") + ".golden"); err != nil {
		t.Errorf("no golden file: %v", err)
	}
	env := map[string]string{"HOME": h.home}
	if stdout, errs, code := runCLI(t, env, "sim", "run", out); code != 0 || !strings.Contains(stdout, "PASS") {
		t.Fatalf("sim run: exit %d\n%s%s\nscenario:\n%s", code, stdout, errs, file)
	}

	// The service now behaves otherwise: U0APP is no approver.
	other := filepath.Join(t.TempDir(), "SOUL.md")
	if err := os.WriteFile(other, []byte(gatekeeperSoul), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, _, code := runCLI(t, env, "sim", "run", "--soul", other, out); code != 1 || !strings.Contains(stdout, "FAIL") {
		t.Errorf("sim run on a changed behaviour: exit %d\n%s", code, stdout)
	}
	// The recorded answer is not what is posted.
	changed := strings.Replace(file, "deploying now, ", "deploying later, ", 1)
	if changed == file {
		t.Fatalf("no answer to change in:\n%s", file)
	}
	if err := os.WriteFile(out, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, _, code := runCLI(t, env, "sim", "run", out); code != 1 || !strings.Contains(stdout, "FAIL") {
		t.Errorf("sim run with a changed answer: exit %d\n%s", code, stdout)
	}
}

// A thread the store does not hold, and a bad command line, are one-line
// errors and no file.
func TestSimRecordErrors(t *testing.T) {
	h := newHarness(t, rulesSoul)
	out := filepath.Join(t.TempDir(), "x.yaml")
	if _, errs, code := h.runCLI("sim", "record", "--out", out, "C0TEAM", "999.9"); code == 0 || !strings.Contains(errs, "no stored session for this thread") {
		t.Errorf("unknown thread: exit %d %q", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a file was written for an unknown thread")
	}
	if _, errs, code := h.runCLI("sim", "record", "C0TEAM"); code != 2 || !strings.Contains(errs, "usage: agent sim record") {
		t.Errorf("one argument: exit %d %q", code, errs)
	}
	if _, errs, code := h.runCLI("sim", "record", "--update", "C0TEAM", "1.1"); code != 2 || !strings.Contains(errs, "--update needs --out") {
		t.Errorf("--update without --out: exit %d %q", code, errs)
	}
}
