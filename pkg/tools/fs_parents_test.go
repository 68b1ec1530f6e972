package tools

import (
	"os"
	"path/filepath"
	"testing"
)

// fsParents resolves every path as fsEvalPath does, whether its directory,
// its last component, both or neither is a symlink, exists or not.
func TestFsParentsAsEvalPath(t *testing.T) {
	root, err := fsEvalPath(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("real/home")
	mk("elsewhere")
	if err := os.WriteFile(filepath.Join(root, "real/home/.env"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(root, "real"), "linked")                     // a directory on the way
	link(filepath.Join(root, "elsewhere/db"), "real/home/agent.db") // the file itself, dangling
	link("../../elsewhere", "real/home/rel")                        // relative
	ps := fsParents{}
	for _, p := range []string{
		"real/home/.env", "real/home/.env-wal", "linked/home/.env", "linked/home/.env-shm",
		"real/home/agent.db", "real/home/agent.db-journal", "linked/home/agent.db",
		"real/home/rel", "real/home/rel/x", "missing/dir/.env", "linked/missing/.env",
	} {
		abs := filepath.Join(root, p)
		want, werr := fsEvalPath(abs)
		got, gerr := ps.eval(abs)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Errorf("%s: eval = %q, %v; fsEvalPath = %q, %v", p, got, gerr, want, werr)
		}
	}
	if len(ps) >= 11 {
		t.Errorf("%d directories resolved for 11 paths: nothing shared", len(ps))
	}
}
