package deps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// materialize makes dir (which must not exist) a checkout of d's
// repository at want, or at d's ref when want is empty, and returns the
// commit checked out.
func (r *run) materialize(ctx context.Context, d dep, dir, want string) (string, error) {
	r.progressf("cloning %s (%s@%s)…", d.name, d.url, d.ref)
	if want == "" && !looksLikeSHA(d.ref) {
		// A branch or a tag: the cheapest clone that has it.
		if _, err := r.git(ctx, "", "clone", "--quiet", "--depth", "1", "--branch", d.ref, "--", d.url, dir); err != nil {
			return "", err
		}
		return r.head(ctx, dir)
	}
	if want == "" {
		want = d.ref
	}
	if isFullSHA(want) {
		// Fetching one commit by name works on GitHub and on any server
		// running protocol v2; older servers may refuse, hence the fallback.
		err := r.fetchCommit(ctx, dir, d.url, want)
		if err == nil {
			return want, nil
		}
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return "", errors.Join(err, rmErr)
		}
	}
	if _, err := r.git(ctx, "", "clone", "--quiet", "--no-checkout", "--", d.url, dir); err != nil {
		return "", err
	}
	sha, err := r.git(ctx, dir, "rev-parse", "--verify", "--quiet", want+"^{commit}")
	if err != nil {
		// A hex-looking branch name is a remote-tracking branch here.
		sha, err = r.git(ctx, dir, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+want+"^{commit}")
	}
	if err != nil {
		return "", fmt.Errorf("commit %s not found in the repository", want)
	}
	sha = strings.TrimSpace(sha)
	if _, err := r.git(ctx, dir, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", sha); err != nil {
		return "", err
	}
	return sha, nil
}

// fetchCommit makes dir a shallow checkout of one commit.
func (r *run) fetchCommit(ctx context.Context, dir, url, sha string) error {
	if _, err := r.git(ctx, "", "init", "--quiet", "--", dir); err != nil {
		return err
	}
	steps := [][]string{
		{"remote", "add", "origin", url},
		{"fetch", "--quiet", "--depth", "1", "origin", sha},
		{"-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", sha},
	}
	for _, args := range steps {
		if _, err := r.git(ctx, dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// cached returns a clone of d's repository at want (at d's ref when want
// is empty) under .cache/deps/repos/, reusing the one there when it is
// already at want, and its commit.
func (r *run) cached(ctx context.Context, d dep, want string) (dir, sha string, err error) {
	dir = filepath.Join(r.Home, ".cache", "deps", "repos", cacheKey(d))
	if want != "" {
		if head, err := r.head(ctx, dir); err == nil && head == want {
			return dir, want, nil
		}
	}
	tmp, cleanup, err := r.tempDir(d.name)
	if err != nil {
		return "", "", err
	}
	defer cleanup()
	repo := filepath.Join(tmp, "repo")
	if sha, err = r.materialize(ctx, d, repo, want); err != nil {
		return "", "", err
	}
	return dir, sha, r.replaceDir(repo, dir)
}

// cacheKey names d's clone in the cache: readable, and distinct per
// repository and ref so that entries on different refs do not evict each
// other.
func cacheKey(d dep) string {
	sum := sha256.Sum256([]byte(d.url + "\x00" + d.ref))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(d.repo))
	return name + "-" + hex.EncodeToString(sum[:6])
}

// head returns the commit checked out in dir, which must itself be a
// repository: without the .git check, git would find a repository
// enclosing the home and answer for it.
func (in *Installer) head(ctx context.Context, dir string) (string, error) {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return "", fmt.Errorf("%s is not a git checkout", dir)
	}
	out, err := in.git(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// installed returns the commit of d's installed copy, reading only local
// files: the .agent-sha marker of a repository folder, or HEAD of a
// checkout. The error matches fs.ErrNotExist when nothing is installed.
func (in *Installer) installed(ctx context.Context, d dep) (string, error) {
	dir := filepath.Join(in.Home, d.dir)
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	if d.path == "" {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
			return "", errors.New("installed copy is not a git checkout")
		}
		out, err := in.git(ctx, dir, "rev-parse", "--verify", "HEAD")
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(out), nil
	}
	sha, path, err := readMarker(dir)
	if err != nil {
		return "", err
	}
	if path != d.path {
		return "", fmt.Errorf("installed copy is of folder %q", path)
	}
	return sha, nil
}

// sameRepo reports whether two clone URLs name the same repository,
// ignoring the scheme, user, letter case of the host and a .git suffix, so
// that an SSH checkout of the HTTPS address matches.
func sameRepo(a, b string) bool { return repoKey(a) == repoKey(b) }

func repoKey(raw string) string {
	host, path := "", raw
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		host, path = u.Hostname(), u.Path
	} else if h, p, ok := strings.Cut(raw, ":"); ok && !strings.Contains(h, "/") {
		// scp-like syntax: [user@]host:path
		host, path = h[strings.LastIndex(h, "@")+1:], p
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	return strings.ToLower(host) + "/" + path
}
