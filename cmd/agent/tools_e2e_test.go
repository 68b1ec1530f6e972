package main

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// lastResult is the text of the request's last tool_result, if any.
func lastResult(req fake.AnthropicRequest) (string, bool, bool) {
	msgs := req.ParsedMessages()
	last := msgs[len(msgs)-1].Content
	b := last[len(last)-1]
	if b.Type != "tool_result" {
		return "", false, false
	}
	return b.ResultText(), b.IsError, true
}

// script answers the model's requests in order: each step sees the last
// tool result and returns the next response.
func (h *harness) script(steps ...func(result string, isErr bool) fake.AnthropicResponse) {
	var mu sync.Mutex
	i := 0
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		mu.Lock()
		defer mu.Unlock()
		res, isErr, _ := lastResult(req)
		if i >= len(steps) {
			return fake.TextReply("")
		}
		i++
		return steps[i-1](res, isErr)
	}
}

func use(id, tool string, input any) func(string, bool) fake.AnthropicResponse {
	return func(string, bool) fake.AnthropicResponse { return fake.ToolUse(id, tool, input) }
}

// say replies with the last tool result, marked as an error when it was one.
func say(id string) func(string, bool) fake.AnthropicResponse {
	return func(res string, isErr bool) fake.AnthropicResponse {
		if isErr {
			res = "ERROR " + res
		}
		return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": res})
	}
}

func TestToolGateAsksOncePerCallAndAlways(t *testing.T) {
	h := newHarness(t, rulesSoul) // AGENT_DEFAULT_MODE is ask
	h.script(
		use("t1", "Bash", map[string]string{"command": "echo first"}),
		say("r1"),
		use("t2", "Bash", map[string]string{"command": "echo second"}),
		say("r2"),
		use("t3", "Bash", map[string]string{"command": "echo third"}),
		say("r3"),
	)
	h.start()
	ctx := h.ctx()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "run things"})

	card1, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	if b := cardButtons(t, card1); b["always"] == "" || !strings.Contains(string(card1.Blocks), "echo first") {
		t.Fatalf("tool-gate card: buttons %v blocks %s", b, card1.Blocks)
	}
	h.click("U0BACKUP", card1, "approve") // the DM's cards: the managers
	h.expectNotice("D0MGR", "100.1", "first")

	// The approval released that call once: the next (changed) call asks again.
	card2, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 && p.TS != card1.TS })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(card2.Blocks), "echo second") {
		t.Fatalf("second card: %s", card2.Blocks)
	}
	h.click("U0MGR", card2, "always")
	h.expectNotice("D0MGR", "100.1", "second")
	// "always": Bash now runs without a card for the rest of the thread.
	h.expectReply("D0MGR", "100.1", "third")
	cards := 0
	for _, p := range h.slack.Posts() {
		if len(p.Blocks) > 0 {
			cards++
		}
	}
	if cards != 2 {
		t.Fatalf("%d cards posted, want 2", cards)
	}
}

func TestPathEscapesAreRefused(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.script(
		use("t1", "Read", map[string]string{"file_path": "/etc/passwd"}),
		say("r1"),
		use("t2", "Read", map[string]string{"file_path": "../../db.sqlite"}),
		say("r2"),
		use("t3", "Read", map[string]string{"file_path": h.home + "/.env"}),
		say("r3"),
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "read stuff"})
	p1 := h.expectNotice("D0MGR", "100.1", "ERROR")
	if !strings.Contains(p1.Text, "outside the allowed folders") {
		t.Fatalf("absolute escape: %q", p1.Text)
	}
	h.expectReply("D0MGR", "100.1", "ERROR") // the turn ends after the third refusal
	var errs int
	for _, p := range h.slack.Posts() {
		if strings.HasPrefix(p.Text, "ERROR") {
			errs++
			if strings.Contains(p.Text, "root:") || strings.Contains(p.Text, "SQLite") {
				t.Fatalf("a refused file's content reached the thread: %q", p.Text)
			}
		}
	}
	if errs != 3 {
		t.Fatalf("%d refusals posted, want 3: %+v", errs, h.slack.Posts())
	}
}

func TestUploadAndAttachments(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	file := h.slack.AddFile("notes.txt", []byte("the attached notes\n"))
	h.script(
		use("t1", "Read", map[string]string{"file_path": "attachments/notes.txt"}),
		use("t2", "Write", map[string]string{"file_path": "report.txt", "content": "report body\n"}),
		use("t3", "mcp__agent_chat__upload", map[string]string{"path": "report.txt", "title": "Report", "comment": "here it is"}),
		use("t4", "mcp__agent_chat__upload", map[string]string{"path": "/etc/hostname"}),
		say("r1"),
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "see attached", Subtype: "file_share", Files: []fake.File{file}})
	h.expectReply("D0MGR", "100.1", "ERROR path /etc/hostname is outside the allowed folders")
	reqs := h.model.Requests()
	if first := reqs[0].LastUserText(); !strings.Contains(first, "attachments/notes.txt") {
		t.Fatalf("the agent was not told about the attachment: %q", first)
	}
	if res, _, _ := lastResult(reqs[1]); !strings.Contains(res, "the attached notes") {
		t.Fatalf("Read of the attachment = %q", res)
	}
	up, err := h.slack.WaitForUpload(h.ctx(), func(u fake.Upload) bool { return u.Filename == "report.txt" })
	if err != nil {
		t.Fatal(err)
	}
	if string(up.Content) != "report body\n" || up.ThreadTS != "100.1" || up.Title != "Report" {
		t.Fatalf("upload = %+v", up)
	}
}

// An uploaded file's text is redacted like a reply, the credential in any
// encoding; a binary file that shows one is not uploaded at all.
func TestUploadRedactsCredentials(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	encoded := base64.StdEncoding.EncodeToString([]byte("BOT=" + fake.DefaultBotToken))
	h.script(
		use("t1", "Write", map[string]string{"file_path": "dump.txt", "content": "env dump: " + encoded + "\n"}),
		use("t2", "mcp__agent_chat__upload", map[string]string{"path": "dump.txt"}),
		use("t3", "Bash", map[string]string{"command": `printf '\377\376%s' ` + fake.DefaultBotToken + ` > blob.bin`}),
		use("t4", "mcp__agent_chat__upload", map[string]string{"path": "blob.bin"}),
		say("r1"),
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "dump it"})
	h.expectReply("D0MGR", "100.1", "blob.bin holds a credential; it is not uploaded")
	up, err := h.slack.WaitForUpload(h.ctx(), func(u fake.Upload) bool { return u.Filename == "dump.txt" })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(up.Content), encoded[8:24]) || !strings.Contains(string(up.Content), "[redacted: credential]") {
		t.Fatalf("uploaded content = %q", up.Content)
	}
	for _, u := range h.slack.Uploads() {
		if u.Filename == "blob.bin" {
			t.Fatal("the binary file with a credential was uploaded")
		}
	}
}
