package tools_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// The security core: every way out of the allowed folders is refused, by
// Read and by Write alike, and nothing is written outside.
func TestPathConfinement(t *testing.T) {
	e := newBtEnv(t, func(o *tools.BuiltinOptions) {
		o.Deny = append(o.Deny, filepath.Join(o.Home, "knowledge/kb/state.db"))
	})
	ws, home, outside := e.ws, e.home, e.outside
	fake.WriteFile(t, filepath.Join(outside, "secret.txt"), "outside secret\n")
	fake.WriteFile(t, filepath.Join(ws, "real/inner.txt"), "inner\n")
	fake.WriteFile(t, filepath.Join(ws, ".env"), "LLM_API_KEY=sk-x\n")
	fake.WriteFile(t, filepath.Join(home, "knowledge/kb/state.db"), "db")
	fake.WriteFile(t, filepath.Join(home, "knowledge/kb/state.db-wal"), "wal")
	fake.Symlink(t, "/etc", filepath.Join(ws, "etc-link"))                                 // directory symlink out
	fake.Symlink(t, "/etc/passwd", filepath.Join(ws, "passwd-link"))                       // file symlink out
	fake.Symlink(t, outside, filepath.Join(ws, "out-dir"))                                 // symlinked parent directory
	fake.Symlink(t, filepath.Join(outside, "new.txt"), filepath.Join(ws, "dangling"))      // dangling, pointing out
	fake.Symlink(t, "../../../"+filepath.Base(outside), filepath.Join(ws, "relative-out")) // relative, pointing out
	fake.Symlink(t, filepath.Join(ws, "real"), filepath.Join(ws, "alias"))                 // pointing inside
	fake.Symlink(t, filepath.Join(home, "db.sqlite"), filepath.Join(ws, "db-link"))        // to the database
	fake.Symlink(t, filepath.Join(ws, ".env"), filepath.Join(ws, "env-link"))              // to a .env file
	fake.Symlink(t, "/proc/1/environ", filepath.Join(ws, "environ-link"))                  // to process state
	fake.Symlink(t, "/dev", filepath.Join(ws, "dev-link"))                                 // to the devices
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o600); err != nil {               // a read would block
		t.Fatal(err)
	}
	fake.Symlink(t, "loop2", filepath.Join(ws, "loop1"))
	fake.Symlink(t, "loop1", filepath.Join(ws, "loop2"))

	const (
		outsideMsg = "outside the allowed folders (the workspace, skills/ and knowledge/)"
		envMsg     = ".env files hold credentials"
		denyMsg    = "off limits"
		missingMsg = "does not exist"
		systemMsg  = "system paths are off limits"
	)
	cases := []struct {
		name, path string
		read       string // "" allowed, else a fragment of the refusal
		write      string
	}{
		{"dot-dot", "../../etc/passwd", outsideMsg, outsideMsg},
		{"deep dot-dot", "a/../../../../../../../../etc/passwd", outsideMsg, outsideMsg},
		{"absolute", "/etc/passwd", outsideMsg, outsideMsg},
		{"directory symlink out", "etc-link/passwd", outsideMsg, outsideMsg},
		{"file symlink out", "passwd-link", outsideMsg, outsideMsg},
		{"symlinked parent dir", "out-dir/secret.txt", outsideMsg, outsideMsg},
		{"symlinked parent dir, new file", "out-dir/new.txt", outsideMsg, outsideMsg},
		{"dangling symlink out", "dangling", outsideMsg, outsideMsg},
		{"relative symlink out", "relative-out/secret.txt", outsideMsg, outsideMsg},
		{"symlink loop", "loop1", "too many symlinks", "too many symlinks"},
		{"other workspace", "../C0OTHER_1/x.txt", outsideMsg, outsideMsg},
		{"home itself", home + "/SOUL.md", outsideMsg, outsideMsg},
		{"database", filepath.Join(home, "db.sqlite"), outsideMsg, outsideMsg},
		{"symlink to the database", "db-link", outsideMsg, outsideMsg},
		{"denied file in knowledge", filepath.Join(home, "knowledge/kb/state.db"), denyMsg, denyMsg},
		{"its -wal", filepath.Join(home, "knowledge/kb/state.db-wal"), denyMsg, denyMsg},
		{".env in the workspace", ".env", envMsg, envMsg},
		{".env.local", "sub/.env.local", envMsg, envMsg},
		{"symlink to .env", "env-link", envMsg, envMsg},
		{".env in skills", filepath.Join(home, "skills/s1/.env"), envMsg, envMsg},
		{"skills", filepath.Join(home, "skills/s1/SKILL.md"), "", ""},
		{"skills, relative", "../../skills/s1/SKILL.md", "", ""},
		{"knowledge", filepath.Join(home, "knowledge/kb/README.md"), "", ""},
		{"symlink inside", "alias/inner.txt", "", ""},
		{"nonexistent inside", "new/dir/file.txt", missingMsg, ""},
		{"through a file", "real/inner.txt/x", "goes through a file", "goes through a file"},
		{"empty", " ", "empty", "empty"},
		{"proc", "/proc/self/environ", systemMsg, systemMsg},
		{"proc through a symlink", "environ-link", systemMsg, systemMsg},
		{"sys", "/sys/kernel/notes", systemMsg, systemMsg},
		{"device", "/dev/sda", systemMsg, systemMsg},
		{"device through a symlinked folder", "dev-link/null", systemMsg, systemMsg},
		{"fifo in the workspace", "fifo", "not a regular file", "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.call(t, "Read", map[string]any{"file_path": c.path})
			btCheck(t, "Read", res, c.read)
			// Write to a copy of the name in a fresh file, so a wrongly
			// allowed write is visible outside.
			res = e.call(t, "Write", map[string]any{"file_path": c.path, "content": "written\n"})
			btCheck(t, "Write", res, c.write)
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a write landed outside: %v", err)
	}
	if got := fake.ReadFile(t, filepath.Join(outside, "secret.txt")); got != "outside secret\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if got := fake.ReadFile(t, filepath.Join(ws, ".env")); got != "LLM_API_KEY=sk-x\n" {
		t.Errorf(".env changed: %q", got)
	}
	if got := fake.ReadFile(t, filepath.Join(home, "skills/s1/SKILL.md")); got != "written\n" {
		t.Errorf("skills write: %q", got)
	}
}

// btCheck asserts res is allowed (want "") or refused with want in it.
func btCheck(t *testing.T, tool string, res tools.Result, want string) {
	t.Helper()
	switch {
	case want == "" && res.IsError:
		t.Errorf("%s refused: %s", tool, res.Text)
	case want != "" && !res.IsError:
		t.Errorf("%s allowed: %s", tool, res.Text)
	case want != "" && !strings.Contains(res.Text, want):
		t.Errorf("%s: %q, want it to say %q", tool, res.Text, want)
	}
}

// The other tools go through the same check.
func TestPathConfinementOtherTools(t *testing.T) {
	e := newBtEnv(t, nil)
	fake.Symlink(t, "/etc", filepath.Join(e.ws, "etc-link"))
	fake.WriteFile(t, filepath.Join(e.outside, "f.txt"), "root:x:0:0\n")
	fake.Symlink(t, filepath.Join(e.outside, "f.txt"), filepath.Join(e.ws, "f-link"))
	for _, c := range []struct {
		tool  string
		input map[string]any
	}{
		{"Edit", map[string]any{"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}},
		{"Edit", map[string]any{"file_path": "f-link", "old_string": "root", "new_string": "toor"}},
		{"Grep", map[string]any{"pattern": "root", "path": "/etc"}},
		{"Grep", map[string]any{"pattern": "root", "path": "etc-link"}},
		{"Glob", map[string]any{"pattern": "/etc/*"}},
		{"Glob", map[string]any{"pattern": "*", "path": "../.."}},
		{"Glob", map[string]any{"pattern": "../../*"}},
		{"Glob", map[string]any{"pattern": "etc-link/*"}},
		{"LS", map[string]any{"path": "/"}},
		{"LS", map[string]any{"path": "etc-link"}},
	} {
		res := e.call(t, c.tool, c.input)
		btCheck(t, c.tool, res, "outside the allowed folders")
	}
	// A symlink found while walking is not followed.
	if res := e.call(t, "Grep", map[string]any{"pattern": "root"}); res.IsError || res.Text != "no matches" {
		t.Errorf("Grep followed a symlink: %+v", res)
	}
	if got := fake.ReadFile(t, filepath.Join(e.outside, "f.txt")); got != "root:x:0:0\n" {
		t.Errorf("Edit changed a file outside: %q", got)
	}
}

func BenchmarkResolve(b *testing.B) {
	home := b.TempDir()
	bt, err := tools.NewBuiltins(tools.BuiltinOptions{Home: home, Deny: []string{filepath.Join(home, "db.sqlite")}})
	if err != nil {
		b.Fatal(err)
	}
	key := pipeline.ThreadKey(btChannel, btTS)
	ws, err := bt.Workspace(key)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "notes/2024"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes/2024/plan.md"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bt.Resolve(key, "notes/2024/plan.md"); err != nil {
			b.Fatal(err)
		}
	}
}

// The upload opens only regular files of the workspace itself, by the
// file tools' rule: no symlink out, no skills/ or knowledge/.
func TestOpenInWorkspace(t *testing.T) {
	e := newBtEnv(t, nil)
	key := pipeline.ThreadKey(btChannel, btTS)
	fake.WriteFile(t, filepath.Join(e.ws, "report.txt"), "report\n")
	fake.WriteFile(t, filepath.Join(e.outside, "secret.txt"), "SECRET\n")
	fake.Symlink(t, filepath.Join(e.outside, "secret.txt"), filepath.Join(e.ws, "out-link"))
	fake.Symlink(t, filepath.Join(e.home, "skills/s1/SKILL.md"), filepath.Join(e.ws, "skill-link"))
	fake.Symlink(t, "report.txt", filepath.Join(e.ws, "alias"))
	for _, c := range []struct{ path, want string }{
		{"report.txt", ""},
		{"alias", ""},
		{"out-link", "outside the allowed folders"},
		{"../../db.sqlite", "outside the allowed folders"},
		{"skill-link", "outside the workspace"},
		{filepath.Join(e.home, "skills/s1/SKILL.md"), "outside the workspace"},
		{".env", ".env files"},
		{".", "is a folder"},
		{"missing.txt", "does not exist"},
	} {
		f, err := e.b.OpenInWorkspace(key, c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("OpenInWorkspace(%s): %v", c.path, err)
		case c.want != "" && err == nil:
			f.Close()
			t.Errorf("OpenInWorkspace(%s) opened %s", c.path, f.Name())
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("OpenInWorkspace(%s): %q, want it to say %q", c.path, err, c.want)
		case err == nil:
			f.Close()
		}
	}
}
