package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// The quota counts the attachments/ folders of every workspace by one
// walk when it is made (nothing else of a workspace, nothing behind a
// symlink, no save under way); Prune deletes the files last written before its cut-off, never
// through a symlink, and counts again.
func TestAttachQuotaCountsAndPrunes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspaces")
	outside := t.TempDir()
	old := time.Now().Add(-40 * 24 * time.Hour)
	write := func(p string, n int, at time.Time) {
		t.Helper()
		fake.WriteFile(t, p, strings.Repeat("x", n))
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	write(filepath.Join(dir, "C1_1.1", "attachments", "a.txt"), 100, now)
	write(filepath.Join(dir, "C1_1.1", "attachments", "sub", "b.txt"), 50, now)
	write(filepath.Join(dir, "C1_1.1", "notes.txt"), 1000, old)                       // not an attachment
	write(filepath.Join(dir, "C1_1.1", "attachments", ".agent-write-0.tmp"), 70, now) // a save under way counts its own bytes
	write(filepath.Join(dir, "C1_2.1", "attachments", "old.txt"), 30, old)
	write(filepath.Join(outside, "host.txt"), 500, old)
	fake.Symlink(t, outside, filepath.Join(dir, "C1_3.1", "attachments"))
	fake.Symlink(t, outside, filepath.Join(dir, "C1_2.1", "attachments", "link"))
	fake.Symlink(t, filepath.Join(outside, "host.txt"), filepath.Join(dir, "C1_2.1", "attachments", "host.txt"))

	q := tools.NewAttachQuota(dir, 1000)
	if got := q.Used(); got != 180 {
		t.Fatalf("counted %d bytes at start, want 180", got)
	}
	n, size, err := q.Prune(t.Context(), now.Add(-30*24*time.Hour))
	if err != nil || n != 1 || size != 30 {
		t.Fatalf("Prune = %d files, %d bytes, %v; want 1, 30", n, size, err)
	}
	if got := q.Used(); got != 150 {
		t.Errorf("counted %d bytes after the prune, want 150", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "C1_2.1", "attachments", "old.txt")); !os.IsNotExist(err) {
		t.Errorf("the old attachment is still there: %v", err)
	}
	for _, p := range []string{filepath.Join(outside, "host.txt"), filepath.Join(dir, "C1_1.1", "notes.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was pruned: %v", p, err)
		}
	}
	// A file a command wrote into attachments/ meanwhile is counted from
	// the next prune on.
	write(filepath.Join(dir, "C1_2.1", "attachments", "made.txt"), 20, now)
	if _, _, err := q.Prune(t.Context(), now.Add(-30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := q.Used(); got != 170 {
		t.Errorf("counted %d bytes after the second prune, want 170", got)
	}
	if got := tools.NewAttachQuota(filepath.Join(t.TempDir(), "none"), 10).Used(); got != 0 {
		t.Errorf("no workspaces yet: counted %d", got)
	}
}

// A file that would take the attachments of all threads past the quota
// is skipped and named, whether its declared size says so or its bytes do
// as they arrive (nothing of it is left); a file replacing one of the
// same name gives the old one's bytes back.
func TestAttachmentsQuota(t *testing.T) {
	ae := newAttachEnv(t)
	q := tools.NewAttachQuota(filepath.Join(ae.e.home, "workspaces"), 1000)
	var skipped []string
	ae.a.Quota, ae.a.Skipped = q, func(reason string) { skipped = append(skipped, reason) }
	if note := ae.save(t, ae.file("a.txt", strings.Repeat("a", 600))); !strings.Contains(note, "- attachments/a.txt (600 bytes") {
		t.Fatalf("note:\n%s", note)
	}
	liar := ae.file("c.txt", strings.Repeat("c", 600))
	liar.Size = 0
	note := ae.save(t, ae.file("b.txt", strings.Repeat("b", 600)), liar)
	for _, want := range []string{
		"- b.txt: skipped (600 bytes, over the quota of 1000 bytes for the attachments of all threads)",
		"- c.txt: skipped (over the quota of 1000 bytes for the attachments of all threads)",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	entries, err := os.ReadDir(filepath.Join(ae.e.ws, "attachments"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "a.txt" {
		t.Errorf("attachments/ holds %v (%v), want a.txt alone", entries, err)
	}
	if got := q.Used(); got != 600 {
		t.Errorf("counted %d bytes, want 600", got)
	}
	if strings.Join(skipped, ",") != "quota,quota" {
		t.Errorf("skipped reasons %v", skipped)
	}
	if note := ae.save(t, ae.file("a.txt", strings.Repeat("A", 300))); !strings.Contains(note, "- attachments/a.txt (300 bytes") {
		t.Fatalf("note:\n%s", note)
	}
	if got := q.Used(); got != 300 {
		t.Errorf("counted %d bytes after a.txt was replaced, want 300", got)
	}
}

// NotSaved names every file of a message whose turn may not save them.
func TestAttachmentsNotSaved(t *testing.T) {
	turn := &pipeline.Turn{Event: &pipeline.Event{ChannelID: btChannel, TS: btTS,
		Files: []pipeline.File{{ID: "F1", Name: "../a.txt"}, {ID: "F2"}}}}
	got := tools.NotSaved(turn, "refused").Note
	want := "Files attached to this message, not saved:\n- a.txt: not saved (refused)\n- F2: not saved (refused)"
	if got != want {
		t.Errorf("note:\n%s\nwant:\n%s", got, want)
	}
	if got := tools.NotSaved(&pipeline.Turn{Event: &pipeline.Event{}}, "refused"); got.Note != "" {
		t.Errorf("no files: %q", got.Note)
	}
}
