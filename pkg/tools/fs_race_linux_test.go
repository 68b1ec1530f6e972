package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// fsRaceTries is how many times each tool runs against the flipping
// symlinks: on the code before the tools opened through a root, the swap
// won within the first few hundred.
const fsRaceTries = 1000

// A symlink swapped in between the check and the open wins nothing: while
// a goroutine keeps exchanging a folder of the workspace with a symlink to
// a folder outside, and a file with a symlink to a file outside (as a
// sandboxed command could, with renameat2), the file tools run many times
// and never read, list or write anything outside.
func TestPathSwapRace(t *testing.T) {
	e := newBtEnv(t, nil)
	fake.WriteFile(t, filepath.Join(e.ws, "d/f.txt"), "inside\n")
	fake.WriteFile(t, filepath.Join(e.ws, "g.txt"), "inside\n")
	fake.WriteFile(t, filepath.Join(e.outside, "f.txt"), "SECRET\n")
	fake.WriteFile(t, filepath.Join(e.outside, "leaked-name.txt"), "SECRET\n")
	fake.WriteFile(t, filepath.Join(e.outside, "g.txt"), "SECRET\n")
	fake.Symlink(t, e.outside, filepath.Join(e.ws, "s"))
	fake.Symlink(t, filepath.Join(e.outside, "g.txt"), filepath.Join(e.ws, "h"))

	swap := fake.NewSwapper(t, [2]string{filepath.Join(e.ws, "d"), filepath.Join(e.ws, "s")},
		[2]string{filepath.Join(e.ws, "g.txt"), filepath.Join(e.ws, "h")})
	swap.Start()

	var wins []string
	ok := 0
	for i := 0; i < fsRaceTries; i++ {
		for _, c := range []struct {
			tool  string
			input map[string]any
		}{
			{"Read", map[string]any{"file_path": "d/f.txt"}},
			{"Read", map[string]any{"file_path": "g.txt"}},
			{"Grep", map[string]any{"pattern": "SECRET", "path": "d"}},
			{"LS", map[string]any{"path": "d"}},
			{"Glob", map[string]any{"pattern": "d/*.txt"}},
			{"Write", map[string]any{"file_path": "d/f.txt", "content": "inside\n"}},
			{"Write", map[string]any{"file_path": "d/new.txt", "content": "written\n"}},
			// Only a won race finds the word to replace.
			{"Edit", map[string]any{"file_path": "d/f.txt", "old_string": "SECRET", "new_string": "PWNED"}},
		} {
			res := e.call(t, c.tool, c.input)
			if strings.Contains(res.Text, "SECRET") || strings.Contains(res.Text, "leaked-name") {
				wins = append(wins, c.tool+": "+res.Text)
			}
			if !res.IsError {
				ok++
			}
		}
	}
	flips := swap.Stop()

	for _, name := range []string{"f.txt", "g.txt"} {
		if got := fake.ReadFile(t, filepath.Join(e.outside, name)); got != "SECRET\n" {
			wins = append(wins, "the file outside "+name+" became "+strings.ReplaceAll(got, "\n", `\n`))
		}
	}
	if _, err := os.Stat(filepath.Join(e.outside, "new.txt")); err == nil {
		wins = append(wins, "Write created new.txt outside")
	}
	if len(wins) > 0 {
		t.Fatalf("%d swap(s) won in %d tries (%d flips), the first: %.300q", len(wins), fsRaceTries, flips, wins[0])
	}
	if ok == 0 {
		t.Fatal("no call succeeded: the race test tested nothing")
	}
	t.Logf("%d flips, %d calls succeeded, none leaked", flips, ok)
}
