package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestInSkills(t *testing.T) {
	e := newBtEnv(t, nil)
	key := pipeline.ThreadKey(btChannel, btTS)
	if err := os.Symlink(filepath.Join(e.home, "skills"), filepath.Join(e.ws, "shortcut")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.outside, filepath.Join(e.ws, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{filepath.Join(e.home, "skills", "s1", "SKILL.md"), true},
		{filepath.Join(e.home, "skills", "new", "SKILL.md"), true}, // not there yet
		{filepath.Join(e.home, "skills"), true},
		{"../../skills/s1/SKILL.md", true},
		{"shortcut/evil/SKILL.md", true}, // through a symlink
		{"notes.md", false},
		{"skills/s1/SKILL.md", false}, // the workspace's own skills/ folder
		{filepath.Join(e.home, "knowledge", "kb", "README.md"), false},
		{"elsewhere/SKILL.md", false},
		{filepath.Join(e.home, "skills-old", "x"), false},
		{"", false},
	} {
		if got := e.b.InSkills(key, tt.path); got != tt.want {
			t.Errorf("InSkills(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// TestShared: the folders every conversation reads, by name or through
// a symlink, named from AGENT_HOME as the card shows them.
func TestShared(t *testing.T) {
	e := newBtEnv(t, nil)
	key := pipeline.ThreadKey(btChannel, btTS)
	if err := os.Symlink(filepath.Join(e.home, "knowledge", "kb"), filepath.Join(e.ws, "wiki")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, folder, rel string
	}{
		{filepath.Join(e.home, "skills", "s1", "SKILL.md"), "skills", "skills/s1/SKILL.md"},
		{filepath.Join(e.home, "knowledge", "kb", "wiki", "new.md"), "knowledge", "knowledge/kb/wiki/new.md"},
		{"../../knowledge/kb/README.md", "knowledge", "knowledge/kb/README.md"},
		{"wiki/page.md", "knowledge", "knowledge/kb/page.md"}, // through a symlink
		{filepath.Join(e.home, "knowledge"), "knowledge", "knowledge"},
		{"knowledge/kb/page.md", "", ""}, // the workspace's own folder
		{"notes.md", "", ""},
		{"", "", ""},
	} {
		folder, rel := e.b.Shared(key, tt.path)
		if folder != tt.folder || rel != tt.rel {
			t.Errorf("Shared(%q) = %q, %q; want %q, %q", tt.path, folder, rel, tt.folder, tt.rel)
		}
	}
}
