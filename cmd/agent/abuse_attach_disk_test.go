package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/service"
)

// Attachments cannot fill the disk (issue 33, item 5): the files of all
// threads stay within AGENT_ATTACHMENTS_MAX_GB, old ones are pruned after
// AGENT_ATTACHMENTS_KEEP, and a turn the budgets refuse saves nothing.

// attachIn sends files in thread ts of the manager's DM and waits for the
// reply; it returns the turn's input as the model received it (the last
// request's, the turn's first call being its only one before the reply).
func (h *harness) attachIn(ts, reply string, files ...fake.File) string {
	h.t.Helper()
	n := len(h.model.Requests())
	h.send(fake.Message{User: "U0MGR", Channel: abuseChannel, TS: ts, Text: "see attached", Subtype: "file_share", Files: files})
	h.expectReply(abuseChannel, ts, reply)
	return h.model.Requests()[n].LastUserText()
}

// attachmentsOf lists the thread ts's attachments/ folder (nil when it
// does not exist).
func attachmentsOf(t *testing.T, h *harness, ts string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(h.home, "workspaces", abuseChannel+"_"+ts, "attachments"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A quota of about 1 KB (0.000001 GB = 1073 bytes): the first file of 600
// bytes is saved; in another thread, a second one of 600 bytes would pass
// the quota of all threads together and is skipped, named in the model's
// input, logged and counted; so is a file whose declared size is 0 (the
// platform's size is not trusted: the bytes are counted as they arrive),
// and nothing of either is left on disk.
func TestAbuseAttachmentQuota(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_ATTACHMENTS_MAX_GB"] = "0.000001"
	h.model.Enqueue(sayTool("r1", "one"), fake.TextReply(""), sayTool("r2", "two"), fake.TextReply(""))
	h.start()
	input := h.attachIn("100.1", "one", h.slack.AddFile("a.txt", bytes.Repeat([]byte{'a'}, 600)))
	if !strings.Contains(input, "- attachments/a.txt (600 bytes") {
		t.Fatalf("the first file is not saved:\n%s", input)
	}
	b := h.slack.AddFile("b.txt", bytes.Repeat([]byte{'b'}, 600))
	liar := h.slack.AddFile("c.txt", bytes.Repeat([]byte{'c'}, 600))
	liar.Size = 0
	input = h.attachIn("200.1", "two", b, liar)
	for _, want := range []string{
		"- b.txt: skipped (600 bytes, over the quota of 1073 bytes for the attachments of all threads)",
		"- c.txt: skipped (over the quota of 1073 bytes for the attachments of all threads)",
	} {
		if !strings.Contains(input, want) {
			t.Errorf("the turn's input lacks %q:\n%s", want, input)
		}
	}
	if got := attachmentsOf(t, h, "200.1"); len(got) != 0 {
		t.Errorf("the second thread's attachments/ holds %v, want nothing", got)
	}
	if got := attachmentsOf(t, h, "100.1"); len(got) != 1 || got[0] != "a.txt" {
		t.Errorf("the first thread's attachments/ holds %v, want a.txt", got)
	}
	h.waitMetric(`agent_attachments_skipped_total{reason="quota"}`, 2)
	if n := strings.Count(h.logs.String(), "an attachment is skipped: the attachments of all threads are at their quota"); n != 2 {
		t.Errorf("%d log lines for the skipped files, want 2:\n%s", n, h.logs)
	}
}

// Attachments older than AGENT_ATTACHMENTS_KEEP are deleted by the
// pruning timer, not only at start, and their bytes leave the quota: a
// file that did not fit fits once an old one is gone. Recent files stay,
// and nothing is followed out of a workspace: an old file behind a
// symlink planted at attachments/ or inside it stays.
func TestAbuseAttachmentRetention(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.deps = func(d *service.Deps) { d.PruneEvery = 20 * time.Millisecond }
	h.env["AGENT_ATTACHMENTS_MAX_GB"] = "0.000001" // 1073 bytes
	h.env["AGENT_ATTACHMENTS_KEEP"] = "2d"
	old := time.Now().Add(-3 * 24 * time.Hour)
	outside := t.TempDir()
	fake.WriteFile(t, filepath.Join(outside, "host.txt"), "HOST\n")
	if err := os.Chtimes(filepath.Join(outside, "host.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	trap := filepath.Join(h.home, "workspaces", abuseChannel+"_900.1")
	fake.Symlink(t, outside, filepath.Join(trap, "attachments"))
	fake.Symlink(t, outside, filepath.Join(h.home, "workspaces", abuseChannel+"_901.1", "attachments", "sub"))
	h.model.Enqueue(sayTool("r1", "one"), fake.TextReply(""), sayTool("r2", "two"), fake.TextReply(""),
		sayTool("r3", "three"), fake.TextReply(""))
	h.start()

	h.attachIn("100.1", "one", h.slack.AddFile("a.txt", bytes.Repeat([]byte{'a'}, 600)))
	h.attachIn("200.1", "two", h.slack.AddFile("recent.txt", bytes.Repeat([]byte{'r'}, 100)))
	a := filepath.Join(h.home, "workspaces", abuseChannel+"_100.1", "attachments", "a.txt")
	if err := os.Chtimes(a, old, old); err != nil {
		t.Fatal(err)
	}
	if !fake.Eventually(10*time.Second, func() bool {
		_, err := os.Lstat(a)
		return errors.Is(err, fs.ErrNotExist)
	}) {
		t.Fatalf("an attachment older than AGENT_ATTACHMENTS_KEEP is still there\nlogs:\n%s", h.logs)
	}
	if got := attachmentsOf(t, h, "200.1"); len(got) != 1 || got[0] != "recent.txt" {
		t.Errorf("the recent attachment was pruned: %v", got)
	}
	if got := fake.ReadFile(t, filepath.Join(outside, "host.txt")); got != "HOST\n" {
		t.Errorf("the prune followed a symlink out of a workspace: host.txt = %q", got)
	}
	// 100 bytes are left of 1073: a file of 900 fits only because the
	// pruned one's 600 left the count.
	input := h.attachIn("300.1", "three", h.slack.AddFile("c.txt", bytes.Repeat([]byte{'c'}, 900)))
	if !strings.Contains(input, "- attachments/c.txt (900 bytes") {
		t.Errorf("the pruned file's bytes are still counted against the quota:\n%s", input)
	}
	if !strings.Contains(h.logs.String(), `"msg":"attachments: pruned old files"`) {
		t.Errorf("no log line for the pruned attachments:\n%s", h.logs)
	}
}

// A turn the budgets refuse saves no file of its message: a thread past
// its budget cannot fill the disk by sending files. The message is kept in
// the thread's history with its files named as not saved.
func TestAbuseAttachmentRefusedTurnSavesNothing(t *testing.T) {
	h := newHarness(t, budgetSoul)
	const ts = "300.1"
	// The first turn's call uses the whole budget of 1000 tokens: the
	// turn is refused before its next call, and its card denied.
	h.model.Enqueue(used(sayTool("t1", "one"), 1000, 0, 0, 0))
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: abuseChannel, TS: ts, Text: "first"})
	h.expectNotice(abuseChannel, ts, "one")
	h.click("U0MGR", h.budgetCard(abuseChannel, ts, 1), "deny")
	h.waitMetric(`agent_turns_total{outcome="budget"}`, 1)

	h.send(fake.Message{User: "U0MGR", Channel: abuseChannel, TS: "300.2", ThreadTS: ts, Text: "see attached", Subtype: "file_share",
		Files: []fake.File{h.slack.AddFile("big.bin", bytes.Repeat([]byte{'x'}, 4096))}})
	h.waitMetric(`agent_budget_exhausted_total{budget="thread"}`, 2)
	h.click("U0MGR", h.budgetCard(abuseChannel, ts, 2), "deny")
	h.waitMetric(`agent_turns_total{outcome="budget"}`, 2)
	if got := attachmentsOf(t, h, ts); len(got) != 0 {
		t.Errorf("a refused turn saved its files: attachments/ holds %v", got)
	}
	if n := len(h.model.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1: the refused turn called the model", n)
	}
	var content string
	if err := h.openDB().QueryRowContext(t.Context(),
		"SELECT content FROM messages WHERE role = 'user' ORDER BY created_at DESC, seq DESC LIMIT 1").Scan(&content); err != nil {
		t.Fatal(err)
	}
	if want := "- big.bin: not saved (a budget stopped this turn before it ran"; !strings.Contains(content, want) {
		t.Errorf("the stored message lacks %q: %s", want, content)
	}
}
