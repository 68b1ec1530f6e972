package deps

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// gitEnv is a fake git host (fake.Git) with an identity, serving
// https://github.com/ and https://git.example.com/, so the code under test
// builds its production URLs and never reaches a network.
type gitEnv struct {
	*fake.Git
	t *testing.T
}

func newGitEnv(t *testing.T) *gitEnv {
	t.Helper()
	return &gitEnv{Git: fake.NewGit(t, true), t: t}
}

// testRepo is a bare repository served at https://<host>/<path>.git and a
// working copy the test commits in.
type testRepo struct {
	t    *testing.T
	work string
}

// repo creates the bare repository host/path.git and its working copy.
func (e *gitEnv) repo(host, path string) *testRepo {
	e.t.Helper()
	bare := e.Bare(host, path)
	work := filepath.Join(e.Root, "work", host, path)
	e.Run("", "init", "--quiet", work)
	e.Run(work, "remote", "add", "origin", bare)
	return &testRepo{t: e.t, work: work}
}

// commit writes files (scripts ending in .sh executable), commits them,
// pushes main and returns the commit.
func (r *testRepo) commit(files map[string]string) string {
	r.t.Helper()
	fake.WriteFiles(r.t, r.work, files)
	for name := range files {
		if strings.HasSuffix(name, ".sh") {
			if err := os.Chmod(filepath.Join(r.work, filepath.FromSlash(name)), 0o755); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	gitT(r.t, r.work, "add", "-A")
	gitT(r.t, r.work, "commit", "--quiet", "-m", "change")
	gitT(r.t, r.work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	return gitT(r.t, r.work, "rev-parse", "HEAD")
}

// tag tags the current commit and pushes the tag.
func (r *testRepo) tag(name string) {
	r.t.Helper()
	gitT(r.t, r.work, "tag", "-a", "-m", name, name)
	gitT(r.t, r.work, "push", "--quiet", "origin", "refs/tags/"+name)
}

// gitT runs git in dir and returns its trimmed output, failing the test
// on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return fake.RunGit(t, dir, args...)
}

// gitLog records every git command an Installer runs.
type gitLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *gitLog) git(ctx context.Context, dir string, args ...string) (string, error) {
	l.mu.Lock()
	l.cmds = append(l.cmds, strings.Join(args, " "))
	l.mu.Unlock()
	return ExecGit(ctx, dir, args...)
}

// network lists the recorded commands that talk to a remote.
func (l *gitLog) network() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, c := range l.cmds {
		for _, sub := range []string{"clone", "fetch", "ls-remote", "pull", "push"} {
			if strings.HasPrefix(c, sub+" ") || strings.Contains(c, " "+sub+" ") {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// readFile returns the content of a file under dir, failing the test when
// it cannot.
func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	return err == nil
}

// snapshot lists every path under dir with its size, mode and
// modification time, to show that an operation wrote nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%d %v %s", info.Size(), info.Mode(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
