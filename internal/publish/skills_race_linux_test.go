package publish

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// sync_manifest publishes no file swapped in after the listing: while a
// goroutine keeps exchanging a skill's file with a symlink to a file
// outside (renameat2, as a sandboxed command could), the copy runs many
// times and never carries the file outside.
func TestCopySkillSwapRace(t *testing.T) {
	home, outside := t.TempDir(), t.TempDir()
	skill := filepath.Join(home, "skills", "deploy")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{
		filepath.Join(skill, "SKILL.md"):    "---\nname: deploy\ndescription: d\n---\nbody\n",
		filepath.Join(skill, "notes.md"):    "notes\n",
		filepath.Join(outside, "secret.md"): "HOSTSECRET\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(skill, "link.md")); err != nil {
		t.Fatal(err)
	}
	swap := fake.NewSwapper(t, [2]string{filepath.Join(skill, "notes.md"), filepath.Join(skill, "link.md")})
	p := &Publisher{Home: home}
	swap.Start()
	wins := 0
	for i := 0; i < 500; i++ {
		dst := filepath.Join(t.TempDir(), "deploy")
		_ = p.copySkill(t.Context(), "deploy", dst)
		entries, _ := os.ReadDir(dst)
		for _, e := range entries {
			if data, _ := os.ReadFile(filepath.Join(dst, e.Name())); strings.Contains(string(data), "HOSTSECRET") {
				wins++
			}
		}
	}
	swap.Stop()
	if wins > 0 {
		t.Fatalf("%d of 500 copies published the file outside", wins)
	}
}
