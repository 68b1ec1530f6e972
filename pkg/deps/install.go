package deps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotCovered reports, in [Frozen] mode, a manifest entry the lockfile
// does not pin: absent from it, or pinned for another repository, ref or
// folder. The message is `lockfile does not cover manifest entry "<entry>"`
// where entry is the skill's slug or the knowledge base's label.
var ErrNotCovered = errors.New("lockfile does not cover manifest entry")

// Mode selects which commit [Installer.Install] puts in place.
type Mode int

const (
	// Normal installs the locked commit of each entry the lockfile covers
	// and resolves the ref of every other entry.
	Normal Mode = iota
	// Update resolves every ref again: branches move to their newest
	// commit.
	Update
	// Frozen installs exactly the locked commits. It fails before fetching
	// anything when the lockfile does not cover every entry, and returns
	// the lockfile unchanged.
	Frozen
)

// String returns "normal", "update" or "frozen".
func (m Mode) String() string {
	switch m {
	case Update:
		return "update"
	case Frozen:
		return "frozen"
	}
	return "normal"
}

// Installer installs a manifest's skills and knowledge bases under Home.
// The zero value of Git and Progress is usable: git from PATH, no progress.
type Installer struct {
	// Home is the runtime home (AGENT_HOME); entries go to skills/<slug>/
	// and knowledge/<label>/ under it, clones to .cache/deps/.
	Home string
	// Git runs the git command line; nil means [ExecGit].
	Git Git
	// Progress receives one line per clone or fetch and warnings
	// (operators read it on stderr); nil discards them.
	Progress io.Writer
}

// Install brings the home in line with m and returns the lock describing
// what is installed; the caller writes it with [WriteLock] (not in Frozen
// mode, where it equals lock). lock may be nil or empty.
//
// Entries are installed in manifest order and the first failure stops the
// run; its error names the entry and quotes git. Each entry is replaced
// atomically, so a failed run leaves every entry either as it was or fully
// installed.
//
// Skills and read-only knowledge bases are read-only copies: an entry
// already at the wanted commit is left alone (without network access when
// the commit comes from the lock); otherwise a fresh clone replaces it.
// A shallow clone of the ref is used when resolving it, a shallow fetch
// of the commit when it is pinned, and a full clone as a fallback (for
// abbreviated commits and servers that refuse to serve a commit by name).
// A skill from a repository folder is copied out of a clone kept under
// .cache/deps/ and carries an .agent-sha marker naming its commit.
//
// The writable knowledge base holds the agent's own commits, so an
// existing checkout is never reset: Normal and Frozen leave it alone,
// Update fast-forwards it to the remote ref, and the lock records its
// HEAD. A missing one is fully cloned on its branch (it is pushed to
// later) and reset to the locked commit when there is one.
//
// Local skills are only checked: a missing one is a warning on Progress.
//
// What an install killed midway left under .cache/deps/tmp/ (half-done
// clones and copies, an old copy set aside) is removed first.
func (in *Installer) Install(ctx context.Context, m *Manifest, lock *Lock, mode Mode) (*Lock, error) {
	deps, err := m.planWith(lock)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	if lock == nil {
		lock = &Lock{}
	}
	if mode == Frozen {
		for _, d := range deps {
			if _, gap := d.locked(lock); gap != "" {
				return nil, notCovered(d, gap)
			}
		}
	}
	in.sweepTemp()
	r := &run{Installer: in, mode: mode, lock: lock, resolved: map[string]string{}}
	out := &Lock{Skills: map[string]LockedSkill{}, Knowledge: map[string]LockedKB{}}
	for _, d := range deps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
		var sha string
		switch d.kind {
		case localSkill:
			in.warnIfMissing(d)
			continue
		case writableKB:
			sha, err = r.installWritable(ctx, d)
		default:
			sha, err = r.installReadOnly(ctx, d)
		}
		if err != nil {
			return nil, fmt.Errorf("install %s from %s@%s: %w", d, d.url, d.ref, err)
		}
		switch d.kind {
		case gitSkill:
			out.Skills[d.name] = LockedSkill{Git: d.repo, Ref: d.ref, SHA: sha, Path: d.path}
		case readOnlyKB:
			out.Knowledge[d.name] = LockedKB{Git: d.repo, Ref: d.ref, SHA: sha}
		case writableKB:
			out.AgentKnowledge = &LockedAgentKB{Label: d.name, Git: d.repo, Ref: d.ref, WikiSHA: sha}
		}
	}
	if mode == Frozen {
		return lock.Clone(), nil
	}
	return out, nil
}

func notCovered(d dep, gap string) error {
	err := fmt.Errorf("%w %q", ErrNotCovered, d.name)
	if gap != "not in the lockfile" {
		err = fmt.Errorf("%w: %s", err, gap)
	}
	return err
}

// run is the state of one Install call.
type run struct {
	*Installer
	mode Mode
	lock *Lock
	// resolved maps url and ref to the commit resolved earlier in this
	// run, so entries sharing a repository get the same commit and reuse
	// one clone.
	resolved map[string]string
}

// installReadOnly installs a git skill or a read-only knowledge base and
// returns its commit.
func (r *run) installReadOnly(ctx context.Context, d dep) (string, error) {
	want, gap := d.locked(r.lock)
	if gap != "" || r.mode == Update {
		want = ""
	}
	key := d.url + "\x00" + d.ref
	if want == "" {
		want = r.resolved[key]
	}
	cur, _ := r.installed(ctx, d)
	if want != "" && cur == want {
		return want, nil
	}
	tmp, cleanup, err := r.tempDir(d.name)
	if err != nil {
		return "", err
	}
	defer cleanup()
	dest := filepath.Join(r.Home, d.dir)
	if d.path == "" {
		repo := filepath.Join(tmp, "repo")
		sha, err := r.materialize(ctx, d, repo, want)
		if err != nil {
			return "", err
		}
		r.resolved[key] = sha
		if sha == cur {
			return sha, nil
		}
		return sha, r.replaceDir(repo, dest)
	}
	cache, sha, err := r.cached(ctx, d, want)
	if err != nil {
		return "", err
	}
	r.resolved[key] = sha
	if sha == cur {
		return sha, nil
	}
	copyDir := filepath.Join(tmp, "copy")
	if err := r.copyFolder(d, cache, sha, copyDir); err != nil {
		return "", err
	}
	return sha, r.replaceDir(copyDir, dest)
}

// installWritable installs the writable knowledge base and returns the
// commit of its checkout.
func (r *run) installWritable(ctx context.Context, d dep) (string, error) {
	dest := filepath.Join(r.Home, d.dir)
	if _, err := os.Lstat(dest); err == nil {
		if _, err := os.Lstat(filepath.Join(dest, ".git")); err != nil {
			return "", fmt.Errorf("%s exists but is not a git checkout", filepath.ToSlash(d.dir))
		}
		origin, err := r.git(ctx, dest, "config", "--get", "remote.origin.url")
		if origin = strings.TrimSpace(origin); err != nil || !sameRepo(origin, d.url) {
			return "", fmt.Errorf("%s is a checkout of %q, not of the manifest's repository", filepath.ToSlash(d.dir), origin)
		}
		if r.mode == Update {
			r.progressf("updating %s (%s@%s)…", d.name, d.url, d.ref)
			if _, err := r.git(ctx, dest, "fetch", "--quiet", "origin", d.ref); err != nil {
				return "", err
			}
			if _, err := r.git(ctx, dest, "merge", "--ff-only", "--quiet", "FETCH_HEAD"); err != nil {
				return "", err
			}
		}
		return r.head(ctx, dest)
	}
	want, gap := d.locked(r.lock)
	if gap != "" || r.mode == Update {
		want = ""
	}
	tmp, cleanup, err := r.tempDir(d.name)
	if err != nil {
		return "", err
	}
	defer cleanup()
	repo := filepath.Join(tmp, "repo")
	r.progressf("cloning %s (%s@%s)…", d.name, d.url, d.ref)
	if _, err := r.git(ctx, "", "clone", "--quiet", "--branch", d.ref, "--", d.url, repo); err != nil {
		return "", err
	}
	sha, err := r.head(ctx, repo)
	if err != nil {
		return "", err
	}
	if want != "" && want != sha {
		if _, err := r.git(ctx, repo, "rev-parse", "--verify", "--quiet", want+"^{commit}"); err != nil {
			return "", fmt.Errorf("locked commit %s is not on any branch of the repository", want)
		}
		if _, err := r.git(ctx, repo, "reset", "--quiet", "--hard", want); err != nil {
			return "", err
		}
		sha = want
	}
	return sha, r.replaceDir(repo, dest)
}

// warnIfMissing warns about a local skill whose folder is missing.
func (in *Installer) warnIfMissing(d dep) {
	if _, err := os.Stat(filepath.Join(in.Home, d.dir)); err != nil {
		in.progressf("warning: local %s is not installed: %s does not exist", d, filepath.ToSlash(d.dir))
	}
}

func (in *Installer) git(ctx context.Context, dir string, args ...string) (string, error) {
	if in.Git != nil {
		return in.Git(ctx, dir, args...)
	}
	return ExecGit(ctx, dir, args...)
}

func (in *Installer) progressf(format string, args ...any) {
	if in.Progress != nil {
		fmt.Fprintf(in.Progress, format+"\n", args...)
	}
}
