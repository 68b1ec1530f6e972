package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/tools"
)

// published is the outcome of a push of skills.
type published struct {
	head    string            // SkillsRepo's main after the push
	changed []string          // skills whose folder the push changed
	sha     map[string]string // the commit to lock, per skill
}

// publishSkills copies the skills into the cache clone of SkillsRepo's
// main, commits and pushes them. Any error (git's included) means nothing
// may be recorded as published.
func (p *Publisher) publishSkills(ctx context.Context, slugs []string, lock *deps.Lock) (published, error) {
	url, err := deps.RepoURL(p.SkillsRepo)
	if err != nil {
		return published{}, err
	}
	co, err := p.cacheClone(ctx, url)
	if err != nil {
		return published{}, err
	}
	for _, slug := range slugs {
		dst := filepath.Join(co.Dir, slug)
		if err := os.RemoveAll(dst); err != nil {
			return published{}, err
		}
		if err := p.copySkill(ctx, slug, dst); err != nil {
			return published{}, err
		}
	}
	if _, err := co.git(ctx, append([]string{"add", "--all", "--"}, slugs...)...); err != nil {
		return published{}, err
	}
	names, err := co.git(ctx, append([]string{"diff", "--cached", "--name-only", "--no-renames", "--"}, slugs...)...)
	if err != nil {
		return published{}, err
	}
	changedSet := map[string]bool{}
	for _, name := range strings.Fields(names) {
		slug, _, _ := strings.Cut(name, "/")
		changedSet[slug] = true
	}
	res := published{sha: map[string]string{}}
	for _, slug := range slugs {
		if changedSet[slug] {
			res.changed = append(res.changed, slug)
		}
	}
	if len(res.changed) > 0 {
		msg := "sync_manifest: publish " + strings.Join(res.changed, ", ")
		if _, err := co.Commit(ctx, msg, res.changed...); err != nil {
			return published{}, err
		}
		if err := co.Push(ctx, SkillsRef); err != nil {
			return published{}, err
		}
	}
	if res.head, err = co.Head(ctx); err != nil {
		return published{}, err
	}
	for _, slug := range slugs {
		res.sha[slug] = res.head
		// Keep a locked commit that already has this content, so that a
		// sync with nothing new leaves the lockfile alone even when others
		// pushed to the repository since.
		old, ok := lock.Skills[slug]
		if ok && !changedSet[slug] && old.Git == p.SkillsRepo && old.Ref == SkillsRef && old.Path == slug {
			if diff, err := co.git(ctx, "diff", "--name-only", old.SHA, res.head, "--", slug); err == nil && strings.TrimSpace(diff) == "" {
				res.sha[slug] = old.SHA
			}
		}
	}
	return res, nil
}

// cacheClone returns the clone of url under .cache/publish/, reset to the
// remote's main (or to an empty main when the repository has none yet)
// with nothing else in its working tree. The clone is the runtime's own:
// anything left there by an earlier sync (a commit whose push failed) is
// discarded.
func (p *Publisher) cacheClone(ctx context.Context, url string) (Checkout, error) {
	sum := sha256.Sum256([]byte(url))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(p.SkillsRepo))
	dir := filepath.Join(p.Home, ".cache", "publish", name+"-"+hex.EncodeToString(sum[:6]))
	co := Checkout{Dir: dir, Git: p.Git, Author: p.Author, Log: p.log()}
	if co.Check() != nil {
		if err := os.RemoveAll(dir); err != nil {
			return co, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return co, err
		}
		if _, err := co.git(ctx, "init", "--quiet"); err != nil {
			return co, err
		}
		if _, err := co.git(ctx, "remote", "add", "origin", url); err != nil {
			return co, err
		}
	} else {
		co.clearStaleLocks(ctx, time.Now())
		if _, err := co.git(ctx, "remote", "set-url", "origin", url); err != nil {
			return co, err
		}
	}
	heads, err := co.git(ctx, "ls-remote", "origin", "refs/heads/"+SkillsRef)
	if err != nil {
		return co, err
	}
	var steps [][]string
	if strings.TrimSpace(heads) == "" {
		// A new repository: main starts from nothing.
		steps = [][]string{
			{"symbolic-ref", "HEAD", "refs/heads/" + SkillsRef},
			{"update-ref", "-d", "refs/heads/" + SkillsRef},
			{"read-tree", "--empty"},
		}
	} else {
		tracking := "refs/remotes/origin/" + SkillsRef
		steps = [][]string{
			{"fetch", "--quiet", "origin", "+refs/heads/" + SkillsRef + ":" + tracking},
			{"checkout", "--quiet", "--force", "--no-track", "-B", SkillsRef, tracking},
		}
	}
	steps = append(steps, []string{"clean", "-ffdxq"})
	for _, args := range steps {
		if _, err := co.git(ctx, args...); err != nil {
			return co, err
		}
	}
	return co, nil
}

// copySkill copies the skill folder skills/<slug> to dst: folders and
// regular files, without .git, the installer's .agent-sha marker or
// symlinks (which could point at anything on the volume). Every file is
// opened through a root of skills/ that follows no symlink
// (tools.Confined), so none swapped in after the listing is published.
func (p *Publisher) copySkill(ctx context.Context, slug, dst string) error {
	skills := tools.Confined{Dir: filepath.Join(p.Home, "skills")}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return skills.Walk(slug, func(rel string, e fs.DirEntry, dir *os.Root) error {
		out := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(rel, slug+"/")))
		switch {
		case e.Name() == ".git" || e.Name() == ".agent-sha":
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		case e.IsDir():
			return os.MkdirAll(out, 0o755)
		case e.Type().IsRegular():
			return copyFileIn(dir, e.Name(), out)
		default:
			p.log().WarnContext(ctx, "sync_manifest: skipped a file that is not regular", "path", filepath.Join(skills.Dir, rel))
			return nil
		}
	})
}

// copyFileIn copies the regular file name of dir to out (replaced), with
// its permissions and read access for all.
func copyFileIn(dir *os.Root, name, out string) error {
	in, err := tools.OpenIn(dir, name)
	if err != nil {
		return fmt.Errorf("copy %s: %s", name, tools.OpenReason(err))
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm()|0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return fmt.Errorf("copy %s: %w", name, err)
	}
	return f.Close()
}
