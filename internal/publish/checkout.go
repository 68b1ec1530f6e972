package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/deps"
)

// DefaultEmail is the email of a commit author given without one.
const DefaultEmail = "agent@localhost"

// Checkout is a git working copy the runtime commits in and pushes from.
type Checkout struct {
	// Dir is the working copy; it must hold its own .git.
	Dir string
	// Git runs git; nil means [deps.ExecGit].
	Git deps.Git
	// Author ("Name <email>") signs commits when git has no identity
	// configured; empty means "agent <agent@localhost>".
	Author string
	// Log is told of the locks a killed git left that Commit, Push and
	// the skills' cache clone removed; nil says nothing.
	Log *slog.Logger
}

func (c Checkout) git(ctx context.Context, args ...string) (string, error) {
	if c.Git != nil {
		return c.Git(ctx, c.Dir, args...)
	}
	return deps.ExecGit(ctx, c.Dir, args...)
}

// Check reports an error unless Dir is itself a git working copy. Without
// it git would walk up and answer for a repository enclosing the home.
func (c Checkout) Check() error {
	if _, err := os.Lstat(filepath.Join(c.Dir, ".git")); err != nil {
		return fmt.Errorf("%s is not a git checkout", c.Dir)
	}
	return nil
}

// Head returns the full commit name of HEAD.
func (c Checkout) Head(ctx context.Context) (string, error) {
	if err := c.Check(); err != nil {
		return "", err
	}
	out, err := c.git(ctx, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Commit stages every change under paths (additions, edits, deletions)
// and, when there is any, commits exactly those paths with msg, leaving
// whatever else is staged alone. It reports whether it committed.
func (c Checkout) Commit(ctx context.Context, msg string, paths ...string) (bool, error) {
	if err := c.Check(); err != nil {
		return false, err
	}
	if len(paths) == 0 {
		return false, errors.New("commit: no paths")
	}
	c.clearStaleLocks(ctx, time.Now())
	if _, err := c.git(ctx, append([]string{"add", "--all", "--"}, paths...)...); err != nil {
		return false, err
	}
	staged, err := c.git(ctx, append([]string{"diff", "--cached", "--name-only", "--no-renames", "--"}, paths...)...)
	if err != nil {
		return false, err
	}
	if strings.TrimSpace(staged) == "" {
		return false, nil
	}
	args := append(c.identity(ctx), "commit", "--quiet", "-m", msg, "--")
	if _, err := c.git(ctx, append(args, paths...)...); err != nil {
		return false, err
	}
	return true, nil
}

// Changed lists the files under paths that commit added, modified or
// deleted, relative to its first parent; for a root commit, all of its
// files. A rename counts as a deletion and an addition.
func (c Checkout) Changed(ctx context.Context, commit string, paths ...string) ([]string, error) {
	// diff-tree is plumbing: diff.renames and other porcelain settings of
	// the user's configuration do not change its answer.
	args := append([]string{"diff-tree", "--root", "-r", "--no-commit-id", "--name-only", commit, "--"}, paths...)
	out, err := c.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Push pushes HEAD to the branch ref of origin.
func (c Checkout) Push(ctx context.Context, ref string) error {
	c.clearStaleLocks(ctx, time.Now())
	_, err := c.git(ctx, "push", "--quiet", "origin", "HEAD:refs/heads/"+ref)
	return err
}

// Unpushed counts the commits of HEAD that the remote-tracking branch of
// ref lacks, as of the last fetch or push: no network. Without a
// remote-tracking branch every commit counts.
func (c Checkout) Unpushed(ctx context.Context, ref string) (int, error) {
	spec := "HEAD"
	if _, err := c.git(ctx, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+ref); err == nil {
		spec = "refs/remotes/origin/" + ref + "..HEAD"
	}
	out, err := c.git(ctx, "rev-list", "--count", spec)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// identity returns the -c options that set Author as the committer when
// git's configuration lacks user.name or user.email; nil otherwise, so the
// user's own identity wins.
func (c Checkout) identity(ctx context.Context) []string {
	name, errName := c.git(ctx, "config", "--get", "user.name")
	email, errEmail := c.git(ctx, "config", "--get", "user.email")
	if errName == nil && errEmail == nil && strings.TrimSpace(name) != "" && strings.TrimSpace(email) != "" {
		return nil
	}
	n, e := ParseAuthor(c.Author)
	return []string{"-c", "user.name=" + n, "-c", "user.email=" + e}
}

// ParseAuthor splits "Name <email>" (AGENT_GIT_AUTHOR). A value without an
// email gets [DefaultEmail]; an empty one is "agent".
func ParseAuthor(s string) (name, email string) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "<"); i >= 0 && strings.HasSuffix(s, ">") {
		name, email = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:len(s)-1])
	} else {
		name = s
	}
	if name == "" {
		name = "agent"
	}
	if email == "" {
		email = DefaultEmail
	}
	return name, email
}

// Short is the 7-character abbreviation of a commit name.
func Short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// userinfo matches credentials embedded in a URL (https://user:token@host).
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// OneLine makes err's message safe for a chat line or a tool result: one
// line, credentials in URLs removed, at most 300 characters. A git error
// also quotes the remote's words and the rejected refs ("! [remote
// rejected] main -> main (pre-receive hook declined)"), which say why a
// push failed where git's "error:" line does not.
func OneLine(err error) string {
	s := err.Error()
	var ge *deps.GitError
	if errors.As(err, &ge) {
		if detail := gitDetail(ge); detail != "" {
			s = strings.Replace(s, ge.Error(), detail, 1)
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	s = userinfo.ReplaceAllString(s, "$1")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:299]) + "…"
	}
	return s
}

// gitDetail is ge's message with the lines of its standard error that
// explain a failed push or fetch: fatal:, error:, remote: and "!" lines.
func gitDetail(ge *deps.GitError) string {
	var lines []string
	for _, line := range strings.Split(ge.Stderr, "\n") {
		line = strings.TrimSpace(line)
		for _, prefix := range []string{"fatal:", "error:", "remote:", "!"} {
			if strings.HasPrefix(line, prefix) && strings.TrimSpace(strings.TrimPrefix(line, prefix)) != "" {
				lines = append(lines, line)
				break
			}
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sub, _, _ := strings.Cut(ge.Error(), ": ")
	return sub + ": " + strings.Join(lines, "; ")
}
