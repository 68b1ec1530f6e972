package tools

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// confineSecret is what lies outside: it must never reach a result.
const confineSecret = "---\nname: leak\ndescription: SECRET description\n---\nSECRET body\n"

// read_skill, write_skill, delete_skill and the discovery follow no
// symlink out of skills/; a symlink that stays inside still works.
func TestSkillsStayInsideSkills(t *testing.T) {
	s, dir := newSkillsServer(t)
	outside := t.TempDir()
	fake.WriteFile(t, filepath.Join(outside, "SKILL.md"), confineSecret)
	fake.WriteFile(t, filepath.Join(outside, "keep.txt"), "keep\n")
	fake.Symlink(t, filepath.Join(outside, "SKILL.md"), filepath.Join(dir, "file-out", "SKILL.md")) // SKILL.md itself
	fake.Symlink(t, outside, filepath.Join(dir, "dir-out"))                                         // the skill's folder
	fake.WriteFile(t, filepath.Join(dir, "real", "SKILL.md"), "---\nname: real\ndescription: honest skill\n---\nbody\n")
	fake.Symlink(t, "../real/SKILL.md", filepath.Join(dir, "alias", "SKILL.md")) // inside: fine
	ts := s.Tools()
	read := toolNamed(t, ts, SkillsRead)

	for _, slug := range []string{"file-out", "dir-out"} {
		res := call(t, read, map[string]string{"slug": slug})
		if !res.IsError || strings.Contains(res.Text, "SECRET") || !strings.Contains(res.Text, "outside") {
			t.Errorf("read_skill(%s) = %+v, want a refusal naming the way out", slug, res)
		}
	}
	if res := call(t, read, map[string]string{"slug": "alias"}); res.IsError || !strings.Contains(res.Text, "honest skill") {
		t.Errorf("read_skill(alias) = %+v", res)
	}
	if p := s.Skills.Prompt(); strings.Contains(p, "SECRET") || !strings.Contains(p, "honest skill") {
		t.Errorf("the prompt's skills:\n%s", p)
	}

	write := toolNamed(t, ts, SkillsWrite)
	if res := call(t, write, map[string]string{"slug": "dir-out", "description": "d", "body": "b"}); !res.IsError {
		t.Errorf("write_skill through a symlinked folder = %+v", res)
	}
	if res := call(t, write, map[string]string{"slug": "file-out", "description": "d", "body": "b"}); res.IsError {
		t.Errorf("write_skill over a symlinked SKILL.md = %+v (the link is replaced)", res)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "SKILL.md")); string(got) != confineSecret {
		t.Errorf("write_skill changed the file outside: %q", got)
	}
	if st, err := os.Lstat(filepath.Join(dir, "file-out", "SKILL.md")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("file-out/SKILL.md: %v, %v", st, err)
	}
	if res := call(t, toolNamed(t, ts, SkillsDelete), map[string]string{"slug": "dir-out"}); res.IsError {
		t.Errorf("delete_skill(dir-out) = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep.txt")); err != nil {
		t.Errorf("delete_skill removed what the link pointed at: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "dir-out")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link is still there: %v", err)
	}
}

// open_kb and list_kbs read no README outside knowledge/.
func TestKBStaysInsideKnowledge(t *testing.T) {
	home := t.TempDir()
	outside := t.TempDir()
	fake.WriteFile(t, filepath.Join(outside, "README.md"), "# SECRET\n\nSECRET text\n")
	fake.Symlink(t, outside, filepath.Join(home, "knowledge", "dir-out"))
	fake.Symlink(t, filepath.Join(outside, "README.md"), filepath.Join(home, "knowledge", "file-out", "README.md"))
	fake.WriteFile(t, filepath.Join(home, "knowledge", "real", "README.md"), "# Real\n\nHonest pages.\n")
	fake.Symlink(t, "../real/README.md", filepath.Join(home, "knowledge", "alias", "README.md"))
	k := &KBServer{Home: home}
	open := toolNamed(t, k.Tools(), KBOpen)
	for _, label := range []string{"dir-out", "file-out"} {
		res := call(t, open, map[string]string{"label": label})
		if !res.IsError || strings.Contains(res.Text, "SECRET") || !strings.Contains(res.Text, "outside") {
			t.Errorf("open_kb(%s) = %+v, want a refusal naming the way out", label, res)
		}
	}
	if res := call(t, open, map[string]string{"label": "alias"}); res.IsError || !strings.Contains(res.Text, "Honest pages") {
		t.Errorf("open_kb(alias) = %+v", res)
	}
	if res := call(t, toolNamed(t, k.Tools(), KBList), map[string]string{}); strings.Contains(res.Text, "SECRET") {
		t.Errorf("list_kbs showed a README outside:\n%s", res.Text)
	}
}
