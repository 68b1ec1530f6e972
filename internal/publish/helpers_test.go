package publish_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/deps"
)

// gitEnv is a sandbox for tests that run git: a global configuration of its
// own whose url.<base>.insteadOf rules send https://github.com/ and
// https://git.example.com/ to bare repositories under remotes/, so the code
// builds its production URLs and never reaches a network.
type gitEnv struct {
	t       *testing.T
	root    string
	remotes string
}

// newGitEnv makes the sandbox; withUser sets an identity in the global
// configuration (without it git has none, and commits need the fallback).
func newGitEnv(t *testing.T, withUser bool) *gitEnv {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	root := t.TempDir()
	remotes := filepath.Join(root, "remotes")
	user := ""
	if withUser {
		user = "[user]\n\tname = Test\n\temail = test@example.com\n"
	}
	cfg := fmt.Sprintf(`%s[init]
	defaultBranch = main
[advice]
	detachedHead = false
[url "file://%[2]s/github.com/"]
	insteadOf = https://github.com/
[url "file://%[2]s/git.example.com/"]
	insteadOf = https://git.example.com/
`, user, filepath.ToSlash(remotes))
	path := filepath.Join(root, "gitconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", path)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return &gitEnv{t: t, root: root, remotes: remotes}
}

// bare creates the empty bare repository served at https://<host>/<path>.git
// and returns its directory.
func (e *gitEnv) bare(host, path string) string {
	e.t.Helper()
	dir := filepath.Join(e.remotes, host, path+".git")
	gitT(e.t, "", "init", "--quiet", "--bare", dir)
	return dir
}

// seed commits files to main of the bare repository and returns the commit.
func (e *gitEnv) seed(bare string, files map[string]string) string {
	e.t.Helper()
	work, err := os.MkdirTemp(e.root, "seed-*")
	if err != nil {
		e.t.Fatal(err)
	}
	gitT(e.t, "", "clone", "--quiet", bare, work)
	writeFiles(e.t, work, files)
	gitT(e.t, work, "add", "-A")
	gitT(e.t, work, "-c", "user.name=Seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
	gitT(e.t, work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	return gitT(e.t, work, "rev-parse", "HEAD")
}

// home returns a fresh runtime home.
func (e *gitEnv) home() string {
	e.t.Helper()
	dir, err := os.MkdirTemp(e.root, "home-*")
	if err != nil {
		e.t.Fatal(err)
	}
	return dir
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gitT runs git in dir and returns its trimmed output, failing the test on
// error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := deps.ExecGit(context.Background(), dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out)
}

func writeManifest(t *testing.T, home string, m *deps.Manifest) {
	t.Helper()
	if err := deps.WriteManifest(filepath.Join(home, deps.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
}

func loadManifest(t *testing.T, home string) *deps.Manifest {
	t.Helper()
	m, err := deps.LoadManifest(filepath.Join(home, deps.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func loadLock(t *testing.T, home string) *deps.Lock {
	t.Helper()
	l, err := deps.LoadLock(filepath.Join(home, deps.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fileState is a file's bytes and modification time, to show a sync wrote
// nothing.
func fileState(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	return readFile(t, path) + "@" + st.ModTime().String()
}
