package ingest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// The /ingest sub-agent's tools win no swap race either: while a goroutine
// keeps exchanging raw/ and wiki/ with symlinks to a folder outside the
// knowledge base (renameat2), its Read, Grep, Glob, LS, Write and Edit run
// many times and never read, list or write anything outside.
func TestKBToolsSwapRace(t *testing.T) {
	base := t.TempDir()
	kb, outside := filepath.Join(base, "kb"), filepath.Join(base, "outside")
	for path, body := range map[string]string{
		"kb/raw/a.md":            "raw notes\n",
		"kb/wiki/p.md":           "# Page\n",
		"outside/a.md":           "SECRET\n",
		"outside/p.md":           "# SECRET\n",
		"outside/leaked-name.md": "SECRET\n",
		"outside/keep/README.md": "SECRET\n",
		"kb/README.md":           "# KB\n",
	} {
		p := filepath.Join(base, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, link := range []string{"raw-out", "wiki-out"} {
		if err := os.Symlink(outside, filepath.Join(kb, link)); err != nil {
			t.Fatal(err)
		}
	}
	swap := fake.NewSwapper(t, [2]string{filepath.Join(kb, "raw"), filepath.Join(kb, "raw-out")},
		[2]string{filepath.Join(kb, "wiki"), filepath.Join(kb, "wiki-out")})
	k, err := newKBTools(kb)
	if err != nil {
		t.Fatal(err)
	}
	swap.Start()
	var wins []string
	for i := 0; i < 1000; i++ {
		for _, c := range []struct {
			tool  string
			input map[string]any
		}{
			{"Read", map[string]any{"file_path": "raw/a.md"}},
			{"Grep", map[string]any{"pattern": "SECRET", "path": "raw"}},
			{"LS", map[string]any{"path": "raw"}},
			{"Glob", map[string]any{"pattern": "raw/*.md"}},
			{"Write", map[string]any{"file_path": "wiki/p.md", "content": "# Page\n"}},
			{"Edit", map[string]any{"file_path": "wiki/p.md", "old_string": "SECRET", "new_string": "PWNED"}},
		} {
			raw, _ := json.Marshal(c.input)
			text, _ := k.call(c.tool, raw)
			if strings.Contains(text, "SECRET") || strings.Contains(text, "leaked-name") {
				wins = append(wins, c.tool+": "+text)
			}
		}
	}
	swap.Stop()
	for name, want := range map[string]string{"a.md": "SECRET\n", "p.md": "# SECRET\n"} {
		if got, _ := os.ReadFile(filepath.Join(outside, name)); string(got) != want {
			wins = append(wins, "the file outside "+name+" became "+string(got))
		}
	}
	if len(wins) > 0 {
		t.Fatalf("%d swap(s) won, the first: %.300q", len(wins), wins[0])
	}
}
