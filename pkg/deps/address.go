package deps

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// DefaultRef is the ref of an entry that names none.
const DefaultRef = "main"

// githubHost is where a skill's source address points.
const githubHost = "github.com"

var (
	// ErrInvalidSlug reports a skill slug or knowledge-base label that does
	// not match ^[a-z0-9][a-z0-9-]{0,63}$.
	ErrInvalidSlug = errors.New("invalid slug")
	// ErrMixedModes reports a skill entry that combines fields of different
	// shapes (source with git, ref or slug).
	ErrMixedModes = errors.New("mixed modes are invalid")
)

// slugPattern is the spec's slug format. It also makes a slug safe as one
// directory name: no separators, no dot files, no "..". The patterns are
// compiled when first used, not at start-up: a counted repetition compiles
// into a long program, and most commands never check an address.
var slugPattern = lazyRegexp(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ValidSlug reports whether s is a valid skill slug or knowledge-base label.
func ValidSlug(s string) bool { return slugPattern().MatchString(s) }

var (
	hostPattern    = lazyRegexp(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)
	segmentPattern = lazyRegexp(`^[A-Za-z0-9._-]+$`)
	hexPattern     = lazyRegexp(`^[0-9a-f]{7,64}$`)
)

// lazyRegexp returns expr compiled on its first call.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// RepoURL returns the HTTPS clone URL of a git address written
// host:owner/repo (the form of a legacy skill's git field, a knowledge
// base's git field and AGENT_SKILLS_REPO): https://host/owner/repo.git.
// Nested groups (host:group/sub/repo) are accepted.
func RepoURL(addr string) (string, error) {
	host, path, err := splitRepo(addr)
	if err != nil {
		return "", err
	}
	return "https://" + host + "/" + strings.TrimSuffix(path, ".git") + ".git", nil
}

// splitRepo splits host:owner/repo into its host and owner/repo.
func splitRepo(addr string) (host, path string, err error) {
	host, path, ok := strings.Cut(addr, ":")
	if !ok || !hostPattern().MatchString(host) || validRepoPath(path) != nil {
		return "", "", fmt.Errorf("invalid git address %q: want host:owner/repo", addr)
	}
	return host, path, nil
}

// validRepoPath checks owner/repo (or group/.../repo): at least two plain
// path segments.
func validRepoPath(path string) error {
	segs := strings.Split(path, "/")
	if len(segs) < 2 {
		return errors.New("want owner/repo")
	}
	for _, s := range segs {
		if !segmentPattern().MatchString(s) || s == "." || s == ".." {
			return fmt.Errorf("bad path segment %q", s)
		}
	}
	return nil
}

// repoName is the last segment of a repository path without ".git".
func repoName(path string) string {
	return strings.TrimSuffix(path[strings.LastIndex(path, "/")+1:], ".git")
}

// source is a parsed source address owner/repo[/path][@ref].
type source struct {
	repo string // github.com:owner/repo
	path string // folder inside the repository, "" for all of it
	ref  string
}

// parseSource parses owner/repo[/path][@ref]. The ref follows the last "@"
// that does not start a path segment, so folders such as "@scope" stay in
// the path while refs such as "feature/x" are allowed.
func parseSource(s string) (source, error) {
	addr, ref := s, DefaultRef
	for i := len(s) - 1; i > 0; i-- {
		if s[i] == '@' && s[i-1] != '/' {
			addr, ref = s[:i], s[i+1:]
			break
		}
	}
	if err := validRef(ref); err != nil {
		return source{}, fmt.Errorf("invalid source %q: %w", s, err)
	}
	segs := strings.SplitN(addr, "/", 3)
	if len(segs) < 2 {
		return source{}, fmt.Errorf("invalid source %q: want owner/repo[/path][@ref]", s)
	}
	repoPath := segs[0] + "/" + segs[1]
	if err := validRepoPath(repoPath); err != nil {
		return source{}, fmt.Errorf("invalid source %q: %w", s, err)
	}
	src := source{repo: githubHost + ":" + repoPath, ref: ref}
	if len(segs) == 3 {
		src.path = segs[2]
		if err := validSubPath(src.path); err != nil {
			return source{}, fmt.Errorf("invalid source %q: %w", s, err)
		}
	}
	return src, nil
}

// validSubPath checks a folder inside a repository: relative, slash
// separated, with no empty, "." or ".." segment, so it cannot leave the
// repository.
func validSubPath(p string) error {
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsRune(seg, 0) || strings.ContainsRune(seg, '\\') {
			return fmt.Errorf("invalid folder %q", p)
		}
	}
	return nil
}

// validRef rejects refs git would refuse or could read as an option. It is
// a subset of git check-ref-format, enough to keep refs out of flag
// position and off the wire when they cannot name anything.
func validRef(ref string) error {
	switch {
	case ref == "":
		return errors.New("empty ref")
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf("ref %q starts with -", ref)
	case strings.Contains(ref, "..") || strings.Contains(ref, "@{") || strings.Contains(ref, "//"),
		strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, "."),
		strings.HasSuffix(ref, ".lock"):
		return fmt.Errorf("invalid ref %q", ref)
	}
	for _, r := range ref {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return fmt.Errorf("invalid ref %q", ref)
		}
	}
	return nil
}

// isFullSHA reports whether ref is a full SHA-1 or SHA-256 object name.
func isFullSHA(ref string) bool {
	return (len(ref) == 40 || len(ref) == 64) && hexPattern().MatchString(ref)
}

// looksLikeSHA reports whether ref may be an (abbreviated) commit name,
// which git clone --branch cannot fetch.
func looksLikeSHA(ref string) bool { return hexPattern().MatchString(ref) }
