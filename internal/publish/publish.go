package publish

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/deps"
)

// SkillsRef is the branch runtime-authored skills are pushed to.
const SkillsRef = "main"

// Publisher is sync_manifest: it publishes runtime-authored skills and the
// writable knowledge base's raw notes and records them in agent.json and
// agent.lock. Its methods are safe for concurrent use; syncs run one at a
// time.
type Publisher struct {
	// Home is the runtime home (AGENT_HOME).
	Home string
	// SkillsRepo is AGENT_SKILLS_REPO, "<host>:<owner>/<repo>"; empty keeps
	// runtime-authored skills local-only.
	SkillsRepo string
	// Git runs git; nil means [deps.ExecGit].
	Git deps.Git
	// Author ("Name <email>", AGENT_GIT_AUTHOR) signs commits only when git
	// has no identity configured.
	Author string
	// Log receives one line per sync and the warnings; nil discards them.
	Log *slog.Logger
	// KBLock, when set, is the writable knowledge base's lock that /ingest
	// holds (the ingest job table): a sync takes it too, so that a sync
	// and an ingest never work on the checkout or the lockfile at once.
	KBLock KBLock

	mu sync.Mutex // one sync at a time: they share the cache clone
}

// KBLock is the per-label lock of a knowledge base (*store.Store).
type KBLock interface {
	AcquireIngest(ctx context.Context, label, by string, staleAfter time.Duration) (string, error)
	FinishIngest(ctx context.Context, jobID, status, reason string) error
}

// ErrKBBusy is the error of a sync while an ingest holds the knowledge
// base.
var ErrKBBusy = errors.New("an /ingest of the knowledge base is running; run sync_manifest again when it has finished")

// kbLockStale is how old the heartbeat of the lock's holder may be before
// a sync takes the lock over (ingest's own default).
const kbLockStale = 2 * time.Minute

// Sync is the sync_manifest tool. Runtime-authored skills are the folders
// skills/<slug> that the manifest does not list as a source or git entry
// (local-only {slug} entries and unlisted folders), plus, with SkillsRepo,
// those the manifest lists as SkillsRepo's own {git, ref: main, slug}
// entries, so that edits are published again.
//
// With SkillsRepo set, each is copied to <slug>/ of SkillsRepo's main
// branch (through a clone under .cache/publish/), committed and pushed; the
// manifest gets {git, ref: main, slug} entries for them and the lockfile
// {git, ref, sha, path: <slug>}. A git failure (unreachable remote,
// rejected push) is not an error: unlisted skills are recorded as
// local-only {slug} entries and the result carries a warning quoting git.
// Without SkillsRepo, unlisted skills are recorded as {slug} entries.
//
// The writable knowledge base's raw/ is committed and pushed to its ref,
// and its HEAD recorded as wiki_sha. Read-only knowledge bases are left as
// the manifest has them: its knowledge entries need a git address.
//
// When nothing changed the result is "nothing to sync" and neither file is
// written. An error means the manifest or lockfile could not be read or
// written.
func (p *Publisher) Sync(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	manifestPath := filepath.Join(p.Home, deps.ManifestFile)
	lockPath := filepath.Join(p.Home, deps.LockFile)
	m, err := deps.LoadManifest(manifestPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("sync manifest: %w", err)
	}
	if m != nil && m.AgentKnowledge != nil && p.KBLock != nil {
		job, err := p.KBLock.AcquireIngest(ctx, m.AgentKnowledge.Label, "sync_manifest", kbLockStale)
		if errors.Is(err, store.ErrIngestRunning) {
			return "", ErrKBBusy
		}
		if err != nil {
			return "", fmt.Errorf("sync manifest: %w", err)
		}
		defer func() {
			if err := p.KBLock.FinishIngest(context.WithoutCancel(ctx), job, store.IngestCompleted, ""); err != nil {
				p.log().WarnContext(ctx, "sync_manifest: release the knowledge base's lock", "err", err)
			}
		}()
	}
	lock, err := deps.LoadLock(lockPath)
	if err != nil {
		return "", fmt.Errorf("sync manifest: %w", err)
	}
	nextM := cloneManifest(m)
	nextL := lock.Clone()
	r := &report{}
	if err := p.syncSkills(ctx, nextM, nextL, r); err != nil {
		return "", fmt.Errorf("sync manifest: %w", err)
	}
	p.syncKB(ctx, nextM, nextL, r)

	var wrote []string
	if !reflect.DeepEqual(m, nextM) {
		if err := deps.WriteManifest(manifestPath, nextM); err != nil {
			return "", fmt.Errorf("sync manifest: %w", err)
		}
		wrote = append(wrote, deps.ManifestFile)
	}
	if !reflect.DeepEqual(lock, nextL) {
		if _, err := deps.WriteLock(lockPath, nextL); err != nil {
			return "", fmt.Errorf("sync manifest: %w", err)
		}
		wrote = append(wrote, deps.LockFile)
	}
	text := r.text(wrote)
	p.log().InfoContext(ctx, "sync_manifest", "pushed_skills", len(r.pushed), "local_skills", len(r.local),
		"kb_pushed", r.kb != "", "wrote", strings.Join(wrote, ","), "warnings", len(r.warnings))
	return text, nil
}

// syncSkills publishes or records the runtime-authored skills in m and lock.
func (p *Publisher) syncSkills(ctx context.Context, m *deps.Manifest, lock *deps.Lock, r *report) error {
	dirs, err := p.skillDirs()
	if err != nil {
		return err
	}
	index := map[string]int{}
	for i, e := range m.Skills {
		if s, err := e.Resolve(); err == nil {
			index[s.Slug] = i
		}
	}
	var unlisted, candidates []string
	for _, slug := range dirs {
		i, listed := index[slug]
		switch {
		case !listed:
			unlisted = append(unlisted, slug)
			candidates = append(candidates, slug)
		case m.Skills[i].Source == "" && m.Skills[i].Git == "":
			candidates = append(candidates, slug) // local-only entry
		case p.SkillsRepo != "" && p.ours(m.Skills[i], slug):
			candidates = append(candidates, slug)
		}
	}
	recordLocal := func() {
		for _, slug := range unlisted {
			m.Skills = append(m.Skills, deps.SkillEntry{Slug: slug})
		}
		r.local = unlisted
	}
	if p.SkillsRepo == "" || len(candidates) == 0 {
		recordLocal()
		return nil
	}
	res, err := p.publishSkills(ctx, candidates, lock)
	if err != nil {
		msg := fmt.Sprintf("could not push skills to %s@%s: %s", p.SkillsRepo, SkillsRef, OneLine(err))
		if len(unlisted) > 0 {
			msg += "; recorded " + strings.Join(unlisted, ", ") + " as local-only"
		}
		r.warn(msg)
		p.log().WarnContext(ctx, "sync_manifest: push skills", "repo", p.SkillsRepo, "err", err)
		recordLocal()
		return nil
	}
	for _, slug := range candidates {
		e := deps.SkillEntry{Git: p.SkillsRepo, Ref: SkillsRef, Slug: slug}
		if i, ok := index[slug]; ok {
			m.Skills[i] = e
		} else {
			m.Skills = append(m.Skills, e)
		}
		if lock.Skills == nil {
			lock.Skills = map[string]deps.LockedSkill{}
		}
		lock.Skills[slug] = deps.LockedSkill{Git: p.SkillsRepo, Ref: SkillsRef, SHA: res.sha[slug], Path: slug}
	}
	r.pushed, r.head = res.changed, res.head
	r.repo = p.SkillsRepo + "@" + SkillsRef
	return nil
}

// ours reports whether e is an entry sync_manifest wrote for slug.
func (p *Publisher) ours(e deps.SkillEntry, slug string) bool {
	return e.Source == "" && e.Git == p.SkillsRepo && e.Slug == slug && (e.Ref == "" || e.Ref == SkillsRef)
}

// skillDirs lists the folders under skills/ named as valid slugs, sorted.
// Symlinks are left out: what they point at is not the runtime's to
// publish.
func (p *Publisher) skillDirs() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(p.Home, "skills"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && deps.ValidSlug(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil // ReadDir sorts by name
}

// syncKB commits and pushes the writable knowledge base's raw/ and records
// its HEAD as wiki_sha. Failures are warnings; the lock keeps its old entry
// when the checkout's HEAD is not on the remote.
func (p *Publisher) syncKB(ctx context.Context, m *deps.Manifest, lock *deps.Lock, r *report) {
	ak := m.AgentKnowledge
	if ak == nil {
		return
	}
	ref := ak.RefOrDefault()
	co := Checkout{Dir: filepath.Join(p.Home, "knowledge", ak.Label), Git: p.Git, Author: p.Author, Log: p.log()}
	if err := co.Check(); err != nil {
		r.warn(fmt.Sprintf("knowledge base %s is not installed (%s): run install-deps", ak.Label, err))
		return
	}
	fail := func(what string, err error) {
		r.warn(fmt.Sprintf("could not %s raw/ of knowledge base %s to %s@%s: %s", what, ak.Label, ak.Git, ref, OneLine(err)))
		p.log().WarnContext(ctx, "sync_manifest: "+what+" raw notes", "label", ak.Label, "err", err)
	}
	committed := false
	if st, err := os.Stat(filepath.Join(co.Dir, "raw")); err == nil && st.IsDir() {
		if committed, err = co.Commit(ctx, "sync_manifest: raw notes", "raw"); err != nil {
			fail("commit", err)
			return
		}
	}
	unpushed, err := co.Unpushed(ctx, ref)
	if err != nil {
		fail("push", err)
		return
	}
	if committed || unpushed > 0 {
		if err := co.Push(ctx, ref); err != nil {
			fail("push", err)
			return
		}
	}
	head, err := co.Head(ctx)
	if err != nil {
		fail("push", err)
		return
	}
	if committed || unpushed > 0 {
		r.kb = fmt.Sprintf("pushed raw/ of knowledge base %s to %s@%s (%s)", ak.Label, ak.Git, ref, Short(head))
	}
	lock.AgentKnowledge = &deps.LockedAgentKB{Label: ak.Label, Git: ak.Git, Ref: ref, WikiSHA: head}
}

func (p *Publisher) log() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log
}

func cloneManifest(m *deps.Manifest) *deps.Manifest {
	c := &deps.Manifest{Skills: slices.Clone(m.Skills), Knowledge: slices.Clone(m.Knowledge)}
	if m.AgentKnowledge != nil {
		ak := *m.AgentKnowledge
		c.AgentKnowledge = &ak
	}
	return c
}

// report collects what a sync did, for the tool result.
type report struct {
	pushed   []string // skills whose content the push changed
	repo     string   // SkillsRepo@main
	head     string   // its commit
	local    []string // skills recorded local-only
	kb       string   // the knowledge base's push, as a phrase
	warnings []string
}

func (r *report) warn(msg string) { r.warnings = append(r.warnings, "warning: "+msg) }

// text is the tool result: what was pushed and recorded, then the warnings,
// one per line; "nothing to sync" when nothing changed.
func (r *report) text(wrote []string) string {
	var parts []string
	if len(r.pushed) > 0 {
		parts = append(parts, fmt.Sprintf("pushed %d skill(s) to %s (%s)", len(r.pushed), r.repo, Short(r.head)))
	}
	if len(r.local) > 0 {
		parts = append(parts, fmt.Sprintf("%d local-only skill(s): %s", len(r.local), strings.Join(r.local, ", ")))
	}
	if r.kb != "" {
		parts = append(parts, r.kb)
	}
	if len(wrote) > 0 {
		parts = append(parts, "recorded in "+strings.Join(wrote, " and "))
	}
	line := strings.Join(parts, "; ")
	if line == "" {
		line = "nothing to sync"
	}
	return strings.Join(append([]string{line}, r.warnings...), "\n")
}
