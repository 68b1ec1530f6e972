package fake

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// GitHosts are the hosts a [Git] serves: https://<host>/<path>.git is the
// bare repository <Root>/remotes/<host>/<path>.git.
var GitHosts = []string{"github.com", "git.example.com"}

// Git is a git host for tests that run the git command line: a global git
// configuration of the test's own (GIT_CONFIG_GLOBAL, for the test's
// lifetime) whose url.<base>.insteadOf rules send each of [GitHosts] to bare
// repositories in a temporary folder, so the code under test builds its
// production URLs and no network is used. The configuration names the
// branch main; it has an identity only when asked for one, and the
// identity variables of the environment are cleared, so that commits
// without one are the code's own fallback.
type Git struct {
	// Root is the temporary folder: the configuration, remotes/, and the
	// folders of Home and Seed.
	Root string

	t        testing.TB
	withUser bool
}

// NewGit makes the host and points git at it; withUser gives the
// configuration the identity "Test <test@example.com>". It skips the test
// when git is not on PATH.
func NewGit(t testing.TB, withUser bool) *Git {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH: skipping the tests that run the git command line")
	}
	g := &Git{Root: t.TempDir(), t: t, withUser: withUser}
	g.configure(func(host string) string { return "file://" + filepath.ToSlash(g.Root) + "/remotes/" + host + "/" })
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(g.Root, "gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	return g
}

// configure writes the git configuration, sending https://<host>/ of each
// of [GitHosts] to base(host).
func (g *Git) configure(base func(host string) string) {
	g.t.Helper()
	var cfg strings.Builder
	if g.withUser {
		cfg.WriteString("[user]\n\tname = Test\n\temail = test@example.com\n")
	}
	cfg.WriteString("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
	for _, host := range GitHosts {
		fmt.Fprintf(&cfg, "[url \"%s\"]\n\tinsteadOf = https://%s/\n", base(host), host)
	}
	if err := os.WriteFile(filepath.Join(g.Root, "gitconfig"), []byte(cfg.String()), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// ServeHTTP serves the repositories over git's smart HTTP protocol (git
// http-backend, pushes included) on a port of 127.0.0.1, which it
// returns, and sends https://<host>/ of each of [GitHosts] to
// http://<name>:<port>/<host>/ instead of the folder: tests map name to
// 127.0.0.1 (AGENT_EGRESS_HOSTS) to reach it through the egress proxy.
// hits counts the requests the server got.
func (g *Git) ServeHTTP(name string) (port int, hits *atomic.Int64) {
	g.t.Helper()
	libexec, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		g.t.Fatalf("git --exec-path: %v", err)
	}
	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(libexec)), "git-http-backend"), Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Join(g.Root, "remotes"), "GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=test", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(g.Root, "gitconfig")}}
	hits = new(atomic.Int64)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		g.t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		backend.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	g.t.Cleanup(func() { srv.Close() })
	port = ln.Addr().(*net.TCPAddr).Port
	g.Redirect(fmt.Sprintf("http://%s:%d", name, port))
	return port, hits
}

// Redirect sends https://<host>/ of each of [GitHosts] to base/<host>/
// (base is scheme://host[:port]).
func (g *Git) Redirect(base string) {
	g.t.Helper()
	g.configure(func(host string) string { return base + "/" + host + "/" })
}

// Bare creates the empty bare repository served at
// https://<host>/<path>.git and returns its folder.
func (g *Git) Bare(host, path string) string {
	g.t.Helper()
	dir := filepath.Join(g.Root, "remotes", host, path+".git")
	g.Run("", "init", "--quiet", "--bare", dir)
	return dir
}

// Seed commits files to main of the bare repository, as "Seed
// <seed@example.com>", and returns the commit.
func (g *Git) Seed(bare string, files map[string]string) string {
	g.t.Helper()
	work := g.Home()
	g.Run("", "clone", "--quiet", bare, work)
	WriteFiles(g.t, work, files)
	g.Run(work, "add", "-A")
	g.Run(work, "-c", "user.name=Seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
	g.Run(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
	return g.Run(work, "rev-parse", "HEAD")
}

// Home returns a new empty folder under Root.
func (g *Git) Home() string {
	g.t.Helper()
	dir, err := os.MkdirTemp(g.Root, "home-*")
	if err != nil {
		g.t.Fatal(err)
	}
	return dir
}

// Run runs git in dir (the test's working folder when "") and returns its
// output, trimmed; it fails the test when git fails.
func (g *Git) Run(dir string, args ...string) string {
	g.t.Helper()
	return RunGit(g.t, dir, args...)
}

// RunGit runs git in dir (the test's working folder when "") with no
// terminal prompt, and returns its output, trimmed; it fails t when git
// fails.
func RunGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
