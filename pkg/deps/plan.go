package deps

import (
	"fmt"
	"path/filepath"
)

// depKind is what an entry installs.
type depKind int

const (
	localSkill depKind = iota // skills/<slug>, content only on the volume
	gitSkill                  // skills/<slug>, from git
	readOnlyKB                // knowledge/<label>
	writableKB                // knowledge/<label>, the agent_knowledge entry
)

// dep is one validated manifest entry with everything the installer needs.
type dep struct {
	kind depKind
	name string // slug or label: the entry's name in messages and the lock
	repo string // host:owner/repo
	url  string // clone URL
	ref  string
	path string // folder inside the repository, "" for all of it
	dir  string // install directory, relative to the home
}

// String names the entry in messages: skill "pdf", knowledge "docs",
// agent_knowledge "notes".
func (d dep) String() string {
	switch d.kind {
	case readOnlyKB:
		return fmt.Sprintf("knowledge %q", d.name)
	case writableKB:
		return fmt.Sprintf("agent_knowledge %q", d.name)
	}
	return fmt.Sprintf("skill %q", d.name)
}

// plan validates m and lists its entries in manifest order: skills, then
// read-only knowledge bases, then the writable one.
func (m *Manifest) plan() ([]dep, error) {
	var deps []dep
	slugs := map[string]int{}
	for i, e := range m.Skills {
		s, err := e.Resolve()
		if err != nil {
			return nil, fmt.Errorf("skills[%d]%s: %w", i, e.name(), err)
		}
		if j, ok := slugs[s.Slug]; ok {
			return nil, fmt.Errorf("skills[%d]%s: duplicate slug %q (also skills[%d])", i, e.name(), s.Slug, j)
		}
		slugs[s.Slug] = i
		d := dep{kind: localSkill, name: s.Slug, dir: filepath.Join("skills", s.Slug)}
		if !s.Local() {
			d.kind, d.repo, d.ref, d.path = gitSkill, s.Repo, s.Ref, s.Path
			d.url, _ = RepoURL(s.Repo) // validated by Resolve
		}
		deps = append(deps, d)
	}
	labels := map[string]string{}
	kbs := make([]KBEntry, 0, len(m.Knowledge)+1)
	kbs = append(kbs, m.Knowledge...)
	if m.AgentKnowledge != nil {
		kbs = append(kbs, *m.AgentKnowledge)
	}
	for i, k := range kbs {
		where, kind := fmt.Sprintf("knowledge[%d]", i), readOnlyKB
		if i == len(m.Knowledge) {
			where, kind = "agent_knowledge", writableKB
		}
		if err := k.validate(); err != nil {
			return nil, fmt.Errorf("%s %q: %w", where, k.Label, err)
		}
		if other, ok := labels[k.Label]; ok {
			return nil, fmt.Errorf("%s: duplicate label %q (also %s)", where, k.Label, other)
		}
		labels[k.Label] = where
		url, _ := RepoURL(k.Git)
		deps = append(deps, dep{kind: kind, name: k.Label, repo: k.Git, url: url,
			ref: k.RefOrDefault(), dir: filepath.Join("knowledge", k.Label)})
	}
	return deps, nil
}

// planWith is plan with the folders the lockfile records for legacy git
// skills: an entry {git, ref, slug} whose lock entry (same git and ref) has
// a path installs that folder of the repository, as sync_manifest records
// the skills it pushes to a shared skills repository (<slug>/SKILL.md).
func (m *Manifest) planWith(l *Lock) ([]dep, error) {
	deps, err := m.plan()
	if err != nil || l == nil {
		return deps, err
	}
	for i, d := range deps {
		if d.kind != gitSkill || d.path != "" {
			continue
		}
		if e, ok := l.Skills[d.name]; ok && e.Path != "" && e.Git == d.repo && e.Ref == d.ref {
			deps[i].path = e.Path
		}
	}
	return deps, nil
}

// locked returns the lock's commit for d and an empty gap when the lock
// covers d (same repository, ref and folder); otherwise gap says why not.
func (d dep) locked(l *Lock) (sha, gap string) {
	var git, ref, path string
	switch d.kind {
	case gitSkill:
		e, ok := l.Skills[d.name]
		if !ok {
			return "", "not in the lockfile"
		}
		git, ref, path, sha = e.Git, e.Ref, e.Path, e.SHA
	case readOnlyKB:
		e, ok := l.Knowledge[d.name]
		if !ok {
			return "", "not in the lockfile"
		}
		git, ref, sha = e.Git, e.Ref, e.SHA
	case writableKB:
		e := l.AgentKnowledge
		if e == nil || e.Label != d.name {
			return "", "not in the lockfile"
		}
		git, ref, sha = e.Git, e.Ref, e.WikiSHA
	default:
		return "", ""
	}
	if git != d.repo || ref != d.ref || path != d.path {
		return "", fmt.Sprintf("the lockfile has %s, the manifest %s", describe(git, ref, path), describe(d.repo, d.ref, d.path))
	}
	return sha, ""
}

func describe(git, ref, path string) string {
	if path != "" {
		git += " path " + path
	}
	return git + "@" + ref
}
