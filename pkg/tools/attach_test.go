package tools_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// attachEnv saves attachments from the in-memory platform into a thread's
// workspace of a home holding a SOUL.md.
type attachEnv struct {
	e   *btEnv
	mem *platform.Chat
	a   *tools.Attachments
}

func newAttachEnv(t *testing.T) *attachEnv {
	t.Helper()
	e := newBtEnv(t, nil)
	fake.WriteFile(t, filepath.Join(e.home, "SOUL.md"), "# Persona\n")
	mem := &platform.Chat{}
	return &attachEnv{e: e, mem: mem, a: &tools.Attachments{Workspace: e.b.Workspace, Download: mem, TooLarge: gateway.ErrFileTooLarge}}
}

// save sends files as one message's attachments and returns the note.
func (ae *attachEnv) save(t *testing.T, files ...pipeline.File) string {
	t.Helper()
	return ae.attach(t, files...).Note
}

// attach sends files as one message's attachments and returns what
// became of them.
func (ae *attachEnv) attach(t *testing.T, files ...pipeline.File) tools.Attached {
	t.Helper()
	got, err := ae.a.Save(t.Context(), &pipeline.Turn{Event: &pipeline.Event{ChannelID: btChannel, TS: btTS, Files: files}})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (ae *attachEnv) file(name, content string) pipeline.File {
	return ae.mem.AddFile(name, "text/plain", []byte(content))
}

func TestAttachmentsSaveInTheWorkspace(t *testing.T) {
	ae := newAttachEnv(t)
	note := ae.save(t, ae.file("notes.txt", "the notes\n"), ae.file("notes.txt", "more notes\n"))
	for _, want := range []string{"- attachments/notes.txt (10 bytes, text/plain)", "- attachments/notes-2.txt (11 bytes, text/plain)"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	if got := fake.ReadFile(t, filepath.Join(ae.e.ws, "attachments/notes-2.txt")); got != "more notes\n" {
		t.Errorf("saved %q", got)
	}
	if st, err := os.Stat(filepath.Join(ae.e.ws, "attachments/notes.txt")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("saved file: %v, %v", st, err)
	}
}

// A symlink planted at attachments/ (a sandboxed command can make one)
// is never written through: the persona's SOUL.md stays as it was.
func TestAttachmentsRefuseASymlinkedFolder(t *testing.T) {
	ae := newAttachEnv(t)
	fake.Symlink(t, ae.e.home, filepath.Join(ae.e.ws, "attachments"))
	note := ae.save(t, ae.file("SOUL.md", "# Evil persona\n"))
	if !strings.Contains(note, "SOUL.md: not saved (attachments/ in your workspace is a symlink") {
		t.Errorf("note:\n%s", note)
	}
	if got := fake.ReadFile(t, filepath.Join(ae.e.home, "SOUL.md")); got != "# Persona\n" {
		t.Fatalf("SOUL.md was replaced: %q", got)
	}
}

// A symlink planted at a file's name is replaced, not written through.
func TestAttachmentsReplaceASymlinkedFile(t *testing.T) {
	ae := newAttachEnv(t)
	if err := os.Mkdir(filepath.Join(ae.e.ws, "attachments"), 0o700); err != nil {
		t.Fatal(err)
	}
	fake.Symlink(t, filepath.Join(ae.e.home, "SOUL.md"), filepath.Join(ae.e.ws, "attachments", "SOUL.md"))
	note := ae.save(t, ae.file("SOUL.md", "# Evil persona\n"))
	if !strings.Contains(note, "- attachments/SOUL.md (15 bytes") {
		t.Errorf("note:\n%s", note)
	}
	if got := fake.ReadFile(t, filepath.Join(ae.e.home, "SOUL.md")); got != "# Persona\n" {
		t.Fatalf("SOUL.md was replaced: %q", got)
	}
	if st, err := os.Lstat(filepath.Join(ae.e.ws, "attachments", "SOUL.md")); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("attachments/SOUL.md: %v, %v", st, err)
	}
}

// A name or an id that is a path lands as one file name in attachments/.
func TestAttachmentsCleanNamesAndIDs(t *testing.T) {
	ae := newAttachEnv(t)
	f := func(id, name string) pipeline.File {
		p := ae.file("x", "data")
		p.ID, p.Name = id, name
		return p
	}
	note := ae.save(t,
		f("F1", "../../SOUL.md"),
		f("../../x", ".."),
		f("../..", "..."),
		f("F4", "a\nb\x00c.txt"),
		f("F5", ".env"),
		f("F6", `..\..\win.txt`),
		f("F7", strings.Repeat("é", 200)+".md"),
	)
	for _, want := range []string{"attachments/SOUL.md ", "attachments/x ", "attachments/attachment ", "attachments/a_b_c.txt ",
		"attachments/env ", "attachments/win.txt ", ".md (4 bytes"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	entries, err := os.ReadDir(filepath.Join(ae.e.ws, "attachments"))
	if err != nil || len(entries) != 7 {
		t.Fatalf("attachments/ holds %d entries (%v), want 7", len(entries), err)
	}
	for _, e := range entries {
		if len(e.Name()) > 255 || strings.HasPrefix(e.Name(), ".") {
			t.Errorf("saved as %q", e.Name())
		}
	}
	if got := fake.ReadFile(t, filepath.Join(ae.e.home, "SOUL.md")); got != "# Persona\n" {
		t.Fatalf("SOUL.md was replaced: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ae.e.home, "workspaces", "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the id was joined as a path: %v", err)
	}
}

// Past the caps files are skipped and named; a file bigger than its
// declared size is cut off while streaming and leaves nothing behind.
func TestAttachmentsCaps(t *testing.T) {
	ae := newAttachEnv(t)
	ae.a.MaxFiles, ae.a.MaxBytes = 3, 10
	liar := ae.file("liar.bin", "01234567890123")
	liar.Size = 1
	note := ae.save(t, ae.file("a.txt", "small"), ae.file("big.txt", "01234567890"), liar, ae.file("d.txt", "fourth"))
	for _, want := range []string{
		"- attachments/a.txt (5 bytes",
		"- big.txt: skipped (11 bytes, over the limit of 10 bytes per file)",
		"- liar.bin: skipped (over the limit of 10 bytes per file)",
		"- d.txt: skipped (over the limit of 3 files per message)",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(ae.e.ws, "attachments"))
	if len(entries) != 1 || entries[0].Name() != "a.txt" {
		t.Fatalf("attachments/ holds %v, want only a.txt", entries)
	}
}
