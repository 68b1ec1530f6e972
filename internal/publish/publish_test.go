package publish_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/publish"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/deps"
)

const skillsRepo = "github.com:acme/skills"

func skillFile(name string) string {
	return "---\nname: " + name + "\ndescription: Use for " + name + ".\n---\n\nDo " + name + ".\n"
}

func TestSyncPushesSkills(t *testing.T) {
	ctx := context.Background()
	env := fake.NewGit(t, true)
	bare := env.Bare("github.com", "acme/skills")
	home := env.Home()
	fake.WriteFiles(t, filepath.Join(home, "skills"), map[string]string{
		"alpha/SKILL.md":       skillFile("alpha"),
		"alpha/scripts/run.sh": "echo hi\n",
		"beta/SKILL.md":        skillFile("beta"),
		"pdf/SKILL.md":         skillFile("pdf"), // installed from a source entry: not ours
		"Not_A_Slug/SKILL.md":  skillFile("x"),
	})
	writeManifest(t, home, &deps.Manifest{Skills: []deps.SkillEntry{{Source: "acme/pdf"}, {Slug: "beta"}}})
	p := &publish.Publisher{Home: home, SkillsRepo: skillsRepo}

	got, err := p.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := gitT(t, "", "--git-dir", bare, "rev-parse", "main")
	want := "pushed 2 skill(s) to github.com:acme/skills@main (" + head[:7] + "); recorded in agent.json and agent.lock"
	if got != want {
		t.Fatalf("result = %q\nwant     %q", got, want)
	}
	if files := gitT(t, "", "--git-dir", bare, "ls-tree", "-r", "--name-only", "main"); files != "alpha/SKILL.md\nalpha/scripts/run.sh\nbeta/SKILL.md" {
		t.Errorf("repository files = %q", files)
	}
	if s := gitT(t, "", "--git-dir", bare, "show", "main:alpha/SKILL.md"); s+"\n" != skillFile("alpha") {
		t.Errorf("pushed SKILL.md = %q", s)
	}
	if who := gitT(t, "", "--git-dir", bare, "log", "-1", "--format=%an <%ae>", "main"); who != "Test <test@example.com>" {
		t.Errorf("author = %q, want git's configured identity", who)
	}
	m := loadManifest(t, home)
	wantSkills := []deps.SkillEntry{{Source: "acme/pdf"}, {Git: skillsRepo, Ref: "main", Slug: "beta"}, {Git: skillsRepo, Ref: "main", Slug: "alpha"}}
	if !reflect.DeepEqual(m.Skills, wantSkills) {
		t.Errorf("manifest skills = %+v", m.Skills)
	}
	l := loadLock(t, home)
	wantLock := map[string]deps.LockedSkill{
		"alpha": {Git: skillsRepo, Ref: "main", SHA: head, Path: "alpha"},
		"beta":  {Git: skillsRepo, Ref: "main", SHA: head, Path: "beta"},
	}
	if !reflect.DeepEqual(l.Skills, wantLock) {
		t.Errorf("lock skills = %+v", l.Skills)
	}

	// Nothing new: a no-op that writes nothing.
	manifestPath, lockPath := filepath.Join(home, deps.ManifestFile), filepath.Join(home, deps.LockFile)
	before := fileState(t, manifestPath) + fileState(t, lockPath)
	if got, err := p.Sync(ctx); err != nil || got != "nothing to sync" {
		t.Fatalf("second sync = %q, %v; want nothing to sync", got, err)
	}
	if after := fileState(t, manifestPath) + fileState(t, lockPath); after != before {
		t.Error("the no-op sync changed agent.json or agent.lock")
	}
	if now := gitT(t, "", "--git-dir", bare, "rev-parse", "main"); now != head {
		t.Errorf("the no-op sync pushed: main moved to %s", now)
	}

	// An edit to a published skill is published again.
	fake.WriteFiles(t, filepath.Join(home, "skills"), map[string]string{"alpha/SKILL.md": skillFile("alpha") + "More.\n"})
	got, err = p.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head2 := gitT(t, "", "--git-dir", bare, "rev-parse", "main")
	if want := "pushed 1 skill(s) to github.com:acme/skills@main (" + head2[:7] + "); recorded in agent.lock"; got != want {
		t.Fatalf("third sync = %q, want %q", got, want)
	}
	l = loadLock(t, home)
	if l.Skills["alpha"].SHA != head2 || l.Skills["beta"].SHA != head {
		t.Errorf("lock after edit = %+v; want alpha at %s, beta kept at %s", l.Skills, head2, head)
	}
}

func TestSyncKeepsOtherContentOfTheRepository(t *testing.T) {
	env := fake.NewGit(t, true)
	bare := env.Bare("github.com", "acme/skills")
	env.Seed(bare, map[string]string{"other/SKILL.md": skillFile("other"), "alpha/stale.md": "old\n"})
	home := env.Home()
	fake.WriteFiles(t, filepath.Join(home, "skills"), map[string]string{"alpha/SKILL.md": skillFile("alpha")})
	p := &publish.Publisher{Home: home, SkillsRepo: skillsRepo}
	if _, err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The skill's folder is replaced as a whole; other folders stay.
	if files := gitT(t, "", "--git-dir", bare, "ls-tree", "-r", "--name-only", "main"); files != "alpha/SKILL.md\nother/SKILL.md" {
		t.Errorf("repository files = %q", files)
	}
	if n := gitT(t, "", "--git-dir", bare, "rev-list", "--count", "main"); n != "2" {
		t.Errorf("commits on main = %s, want 2 (the push builds on the remote's history)", n)
	}
}

func TestSyncWithoutSkillsRepo(t *testing.T) {
	env := fake.NewGit(t, true)
	home := env.Home()
	fake.WriteFiles(t, filepath.Join(home, "skills"), map[string]string{
		"beta/SKILL.md":  skillFile("beta"),
		"alpha/SKILL.md": skillFile("alpha"),
		"gamma/SKILL.md": skillFile("gamma"),
	})
	writeManifest(t, home, &deps.Manifest{Skills: []deps.SkillEntry{{Slug: "gamma"}}})
	p := &publish.Publisher{Home: home}
	got, err := p.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := "2 local-only skill(s): alpha, beta; recorded in agent.json"; got != want {
		t.Fatalf("result = %q, want %q", got, want)
	}
	m := loadManifest(t, home)
	if want := []deps.SkillEntry{{Slug: "gamma"}, {Slug: "alpha"}, {Slug: "beta"}}; !reflect.DeepEqual(m.Skills, want) {
		t.Errorf("manifest skills = %+v", m.Skills)
	}
	if _, err := os.Stat(filepath.Join(home, deps.LockFile)); !os.IsNotExist(err) {
		t.Errorf("agent.lock written for local skills: %v", err)
	}
	if got, _ := p.Sync(context.Background()); got != "nothing to sync" {
		t.Errorf("second sync = %q", got)
	}
}

func TestSyncPushFailureFallsBackToLocal(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(env *fake.Git) string // returns SkillsRepo
		message string                     // part of git's message in the warning
	}{
		{"unreachable", func(env *fake.Git) string { return "git.example.com:acme/missing" }, "does not appear to be a git repository"},
		{"rejected", func(env *fake.Git) string {
			bare := env.Bare("github.com", "acme/skills")
			hook := filepath.Join(bare, "hooks", "pre-receive")
			if err := os.WriteFile(hook, []byte("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return skillsRepo
		}, "pre-receive hook declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fake.NewGit(t, true)
			repo := tt.setup(env)
			home := env.Home()
			fake.WriteFiles(t, filepath.Join(home, "skills"), map[string]string{"alpha/SKILL.md": skillFile("alpha")})
			p := &publish.Publisher{Home: home, SkillsRepo: repo}
			got, err := p.Sync(context.Background())
			if err != nil {
				t.Fatalf("sync failed instead of falling back: %v", err)
			}
			lines := strings.Split(got, "\n")
			if len(lines) != 2 || lines[0] != "1 local-only skill(s): alpha; recorded in agent.json" ||
				!strings.HasPrefix(lines[1], "warning: could not push skills to "+repo+"@main: ") ||
				!strings.Contains(lines[1], tt.message) || !strings.HasSuffix(lines[1], "; recorded alpha as local-only") {
				t.Fatalf("result = %q", got)
			}
			if m := loadManifest(t, home); !reflect.DeepEqual(m.Skills, []deps.SkillEntry{{Slug: "alpha"}}) {
				t.Errorf("manifest skills = %+v", m.Skills)
			}
			if l := loadLock(t, home); len(l.Skills) != 0 {
				t.Errorf("lock skills = %+v", l.Skills)
			}
		})
	}
}

func TestSyncPushesKnowledgeRaw(t *testing.T) {
	ctx := context.Background()
	env := fake.NewGit(t, false) // no identity: commits use Author
	bare := env.Bare("git.example.com", "acme/notes")
	env.Seed(bare, map[string]string{"README.md": "# Notes\n", "raw/a.md": "a\n", "wiki/index.md": "# Index\n"})
	home := env.Home()
	kb := filepath.Join(home, "knowledge", "notes")
	gitT(t, "", "clone", "--quiet", "--branch", "main", "https://git.example.com/acme/notes.git", kb)
	writeManifest(t, home, &deps.Manifest{AgentKnowledge: &deps.KBEntry{Label: "notes", Git: "git.example.com:acme/notes"}})
	fake.WriteFiles(t, kb, map[string]string{"raw/b.md": "b\n", "wiki/index.md": "# Index, edited\n"})
	if err := os.Remove(filepath.Join(kb, "raw", "a.md")); err != nil {
		t.Fatal(err)
	}
	p := &publish.Publisher{Home: home, Author: "Ada <agent@localhost>"}

	got, err := p.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := gitT(t, "", "--git-dir", bare, "rev-parse", "main")
	if want := "pushed raw/ of knowledge base notes to git.example.com:acme/notes@main (" + head[:7] + "); recorded in agent.lock"; got != want {
		t.Fatalf("result = %q, want %q", got, want)
	}
	if files := gitT(t, "", "--git-dir", bare, "ls-tree", "-r", "--name-only", "main"); files != "README.md\nraw/b.md\nwiki/index.md" {
		t.Errorf("repository files = %q", files)
	}
	if s := gitT(t, "", "--git-dir", bare, "show", "main:wiki/index.md"); s != "# Index" {
		t.Errorf("sync committed wiki/: %q", s)
	}
	if who := gitT(t, "", "--git-dir", bare, "log", "-1", "--format=%an <%ae>", "main"); who != "Ada <agent@localhost>" {
		t.Errorf("author = %q, want the Author fallback", who)
	}
	l := loadLock(t, home)
	if want := (&deps.LockedAgentKB{Label: "notes", Git: "git.example.com:acme/notes", Ref: "main", WikiSHA: head}); !reflect.DeepEqual(l.AgentKnowledge, want) {
		t.Errorf("lock agent_knowledge = %+v", l.AgentKnowledge)
	}
	if got, _ := p.Sync(ctx); got != "nothing to sync" {
		t.Errorf("second sync = %q", got)
	}
}

func TestSyncKnowledgePushFailureWarns(t *testing.T) {
	env := fake.NewGit(t, true)
	bare := env.Bare("git.example.com", "acme/notes")
	old := env.Seed(bare, map[string]string{"raw/a.md": "a\n"})
	home := env.Home()
	kb := filepath.Join(home, "knowledge", "notes")
	gitT(t, "", "clone", "--quiet", "--branch", "main", "https://git.example.com/acme/notes.git", kb)
	writeManifest(t, home, &deps.Manifest{AgentKnowledge: &deps.KBEntry{Label: "notes", Git: "git.example.com:acme/notes"}})
	fake.WriteFiles(t, kb, map[string]string{"raw/b.md": "b\n"})
	if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := (&publish.Publisher{Home: home}).Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "nothing to sync\nwarning: could not push raw/ of knowledge base notes to git.example.com:acme/notes@main: ") ||
		!strings.Contains(got, "pre-receive hook declined") {
		t.Fatalf("result = %q", got)
	}
	if l := loadLock(t, home); l.AgentKnowledge != nil {
		t.Errorf("lock records an unpushed commit: %+v", l.AgentKnowledge)
	}
	if now := gitT(t, "", "--git-dir", bare, "rev-parse", "main"); now != old {
		t.Errorf("main moved to %s", now)
	}
}

func TestParseAuthor(t *testing.T) {
	tests := []struct{ in, name, email string }{
		{"Ada <agent@localhost>", "Ada", "agent@localhost"},
		{"  Ada Lovelace  <ada@example.com> ", "Ada Lovelace", "ada@example.com"},
		{"Ada (bot) <a@b.c>", "Ada (bot)", "a@b.c"},
		{"Ada", "Ada", publish.DefaultEmail},
		{"", "agent", publish.DefaultEmail},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if name, email := publish.ParseAuthor(tt.in); name != tt.name || email != tt.email {
				t.Errorf("ParseAuthor(%q) = %q, %q; want %q, %q", tt.in, name, email, tt.name, tt.email)
			}
		})
	}
}

func TestOneLineScrubsCredentials(t *testing.T) {
	err := &deps.GitError{Args: []string{"push"}, Stderr: "fatal: unable to access 'https://x-token:s3cret@github.com/acme/notes.git/':\n  denied\n"}
	got := publish.OneLine(err)
	if strings.Contains(got, "s3cret") || strings.Contains(got, "\n") || !strings.Contains(got, "https://github.com/acme/notes.git") {
		t.Errorf("OneLine = %q", got)
	}
}

// sync_manifest and /ingest share the knowledge base's lock: a sync while
// an ingest runs is refused (and changes nothing), and a sync holds the
// lock while it runs and releases it after.
func TestSyncSharesTheIngestLock(t *testing.T) {
	ctx := context.Background()
	env := fake.NewGit(t, true)
	home := env.Home()
	writeManifest(t, home, &deps.Manifest{AgentKnowledge: &deps.KBEntry{Label: "notes", Git: "git.example.com:acme/notes"}})
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "db.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := &publish.Publisher{Home: home, KBLock: st}

	job, err := st.AcquireIngest(ctx, "notes", "U0MGR", time.Hour) // an ingest is running
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sync(ctx); !errors.Is(err, publish.ErrKBBusy) {
		t.Fatalf("sync during an ingest: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, deps.LockFile)); !os.IsNotExist(err) {
		t.Errorf("a refused sync wrote the lockfile: %v", err)
	}
	if err := st.FinishIngest(ctx, job, store.IngestCompleted, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sync(ctx); err != nil {
		t.Fatalf("sync after the ingest: %v", err)
	}
	// Released: the next ingest gets the lock.
	if _, err := st.AcquireIngest(ctx, "notes", "U0MGR", time.Hour); err != nil {
		t.Errorf("the sync kept the lock: %v", err)
	}
}

// A git killed midway (the container stopped) leaves its lock files in the
// checkout, which would fail every later commit and push: the sync
// removes those untouched for ten minutes, says so in the log, and leaves
// a fresh one (a git still running) alone.
func TestSyncClearsLocksAKilledGitLeft(t *testing.T) {
	ctx := context.Background()
	env := fake.NewGit(t, true)
	bare := env.Bare("git.example.com", "acme/notes")
	env.Seed(bare, map[string]string{"README.md": "# Notes\n", "raw/a.md": "a\n"})
	home := env.Home()
	kb := filepath.Join(home, "knowledge", "notes")
	gitT(t, "", "clone", "--quiet", "--branch", "main", "https://git.example.com/acme/notes.git", kb)
	writeManifest(t, home, &deps.Manifest{AgentKnowledge: &deps.KBEntry{Label: "notes", Git: "git.example.com:acme/notes"}})
	var logs bytes.Buffer
	p := &publish.Publisher{Home: home, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	locks := []string{"index.lock", "refs/heads/main.lock", "refs/remotes/origin/main.lock"}
	lock := func(age time.Duration) {
		t.Helper()
		for _, l := range locks {
			path := filepath.Join(kb, ".git", filepath.FromSlash(l))
			if err := os.WriteFile(path, []byte("half-written\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			then := time.Now().Add(-age)
			if err := os.Chtimes(path, then, then); err != nil {
				t.Fatal(err)
			}
		}
	}

	fake.WriteFiles(t, kb, map[string]string{"raw/b.md": "b\n"})
	lock(time.Minute) // a git still running
	got, _ := p.Sync(ctx)
	if strings.Contains(got, "pushed") || !strings.Contains(got, "index.lock") {
		t.Fatalf("with a git running: %q", got)
	}
	for _, l := range locks {
		if _, err := os.Stat(filepath.Join(kb, ".git", l)); err != nil {
			t.Fatalf("a fresh lock was taken: %v", err)
		}
	}

	lock(11 * time.Minute)
	got, err := p.Sync(ctx)
	if err != nil || !strings.HasPrefix(got, "pushed raw/ of knowledge base notes") {
		t.Fatalf("after the kill: %q, %v", got, err)
	}
	if files := gitT(t, "", "--git-dir", bare, "ls-tree", "-r", "--name-only", "main"); files != "README.md\nraw/a.md\nraw/b.md" {
		t.Errorf("repository files = %q", files)
	}
	for _, l := range locks {
		if !strings.Contains(logs.String(), `msg="git: removed a lock a killed git left"`) || !strings.Contains(logs.String(), "lock="+l) {
			t.Errorf("the log does not name %s:\n%s", l, logs.String())
		}
	}
}
