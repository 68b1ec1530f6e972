package deps

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fixture is a set of remote repositories and a manifest using every
// entry shape.
type fixture struct {
	env                                 *gitEnv
	pdf, skills, legacy, handbook, wiki *testRepo
	// first commit of each repository
	pdf1, skills1, legacy1, handbook1, wiki1 string
	m                                        *Manifest
}

func newFixture(t *testing.T) *fixture {
	env := newGitEnv(t)
	f := &fixture{env: env}
	f.pdf = env.repo("github.com", "acme/pdf")
	f.pdf1 = f.pdf.commit(map[string]string{"SKILL.md": "pdf v1\n"})
	f.skills = env.repo("github.com", "acme/skills")
	f.skills1 = f.skills.commit(map[string]string{
		"README.md":                    "monorepo\n",
		"office/xlsx/SKILL.md":         "xlsx v1\n",
		"office/xlsx/scripts/run.sh":   "#!/bin/sh\necho run\n",
		"office/docx/SKILL.md":         "docx v1\n",
		"office/xlsx/templates/a.xlsx": "template\n",
	})
	f.legacy = env.repo("git.example.com", "team/legacy")
	f.legacy1 = f.legacy.commit(map[string]string{"SKILL.md": "legacy v1\n"})
	f.handbook = env.repo("git.example.com", "docs/handbook")
	f.handbook1 = f.handbook.commit(map[string]string{"README.md": "handbook v1\n"})
	f.wiki = env.repo("github.com", "acme/wiki")
	f.wiki1 = f.wiki.commit(map[string]string{"README.md": "wiki\n", "raw/.keep": "", "wiki/index.md": "index v1\n"})
	f.m = &Manifest{
		Skills: []SkillEntry{
			{Source: "acme/pdf"},
			{Source: "acme/skills/office/xlsx@main"},
			{Git: "git.example.com:team/legacy", Ref: "main", Slug: "old-skill"},
			{Slug: "notes"},
		},
		Knowledge:      []KBEntry{{Label: "handbook", Git: "git.example.com:docs/handbook"}},
		AgentKnowledge: &KBEntry{Label: "wiki", Git: "github.com:acme/wiki", Ref: "main"},
	}
	return f
}

// lockAt is the lock f.m resolves to at the given commits.
func (f *fixture) lockAt(pdf, skills, legacy, handbook, wiki string) *Lock {
	return &Lock{
		Skills: map[string]LockedSkill{
			"pdf":       {Git: "github.com:acme/pdf", Ref: "main", SHA: pdf},
			"xlsx":      {Git: "github.com:acme/skills", Ref: "main", SHA: skills, Path: "office/xlsx"},
			"old-skill": {Git: "git.example.com:team/legacy", Ref: "main", SHA: legacy},
		},
		Knowledge:      map[string]LockedKB{"handbook": {Git: "git.example.com:docs/handbook", Ref: "main", SHA: handbook}},
		AgentKnowledge: &LockedAgentKB{Label: "wiki", Git: "github.com:acme/wiki", Ref: "main", WikiSHA: wiki},
	}
}

// advance pushes a second commit to every repository.
func (f *fixture) advance() {
	f.pdf.commit(map[string]string{"SKILL.md": "pdf v2\n"})
	f.skills.commit(map[string]string{"office/xlsx/SKILL.md": "xlsx v2\n"})
	f.legacy.commit(map[string]string{"SKILL.md": "legacy v2\n"})
	f.handbook.commit(map[string]string{"README.md": "handbook v2\n"})
	f.wiki.commit(map[string]string{"wiki/index.md": "index v2\n"})
}

func TestInstallAndCheck(t *testing.T) {
	f := newFixture(t)
	home := f.env.Home()
	var progress bytes.Buffer
	in := &Installer{Home: home, Progress: &progress}
	lock, err := in.Install(context.Background(), f.m, nil, Normal)
	if err != nil {
		t.Fatal(err)
	}
	if want := f.lockAt(f.pdf1, f.skills1, f.legacy1, f.handbook1, f.wiki1); !reflect.DeepEqual(lock, want) {
		t.Fatalf("lock = %+v\nwant %+v", lock, want)
	}

	// Whole repositories are checkouts at the commit.
	if got := readFile(t, home, "skills/pdf/SKILL.md"); got != "pdf v1\n" {
		t.Fatalf("skills/pdf/SKILL.md = %q", got)
	}
	if got := gitT(t, filepath.Join(home, "skills/old-skill"), "rev-parse", "HEAD"); got != f.legacy1 {
		t.Fatalf("old-skill HEAD = %s, want %s", got, f.legacy1)
	}
	if got := readFile(t, home, "knowledge/handbook/README.md"); got != "handbook v1\n" {
		t.Fatalf("knowledge/handbook/README.md = %q", got)
	}

	// A folder source installs only that folder, with its marker.
	for _, name := range []string{"SKILL.md", "scripts/run.sh", "templates/a.xlsx", ".agent-sha"} {
		if !exists(filepath.Join(home, "skills/xlsx"), name) {
			t.Errorf("skills/xlsx/%s missing", name)
		}
	}
	for _, name := range []string{".git", "README.md", "office", "docx"} {
		if exists(filepath.Join(home, "skills/xlsx"), name) {
			t.Errorf("skills/xlsx/%s installed, want only the folder's content", name)
		}
	}
	if exists(home, "skills/docx") {
		t.Error("skills/docx installed: only the named folder should be")
	}
	if st, err := os.Stat(filepath.Join(home, "skills/xlsx/scripts/run.sh")); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh lost its executable bit: %v %v", st.Mode(), err)
	}
	if got := readFile(t, home, "skills/xlsx/.agent-sha"); got != f.skills1+"\noffice/xlsx\n" {
		t.Errorf(".agent-sha = %q", got)
	}

	// The writable knowledge base is a full clone on its branch.
	wiki := filepath.Join(home, "knowledge/wiki")
	if got := gitT(t, wiki, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("wiki HEAD is %s, want the main branch checked out", got)
	}
	if got := gitT(t, wiki, "rev-parse", "--is-shallow-repository"); got != "false" {
		t.Errorf("wiki is shallow")
	}

	out := progress.String()
	for _, want := range []string{
		"cloning pdf (https://github.com/acme/pdf.git@main)…\n",
		"cloning xlsx (https://github.com/acme/skills.git@main)…\n",
		"cloning old-skill (https://git.example.com/team/legacy.git@main)…\n",
		"cloning handbook (https://git.example.com/docs/handbook.git@main)…\n",
		"cloning wiki (https://github.com/acme/wiki.git@main)…\n",
		`warning: local skill "notes" is not installed: skills/notes does not exist`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(home, ".cache/deps/tmp")); len(entries) != 0 {
		t.Errorf("temporary directories left behind: %v", entries)
	}

	drift, err := in.Check(context.Background(), f.m, lock)
	if err != nil || len(drift) != 0 {
		t.Fatalf("Check() after install = %q, %v; want no drift", drift, err)
	}
}

func TestInstallNoOpKeepsLockfile(t *testing.T) {
	f := newFixture(t)
	home := f.env.Home()
	lockPath := filepath.Join(home, LockFile)
	in := &Installer{Home: home}
	lock, err := in.Install(context.Background(), f.m, nil, Normal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteLock(lockPath, lock); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(lockPath, old, old); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, home, LockFile)

	// The remotes move on; the lock pins the installed commits.
	f.advance()
	loaded, err := LoadLock(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	log := &gitLog{}
	in = &Installer{Home: home, Git: log.git}
	lock, err = in.Install(context.Background(), f.m, loaded, Normal)
	if err != nil {
		t.Fatal(err)
	}
	if net := log.network(); len(net) != 0 {
		t.Errorf("a pinned, installed home went to the network: %q", net)
	}
	changed, err := WriteLock(lockPath, lock)
	if err != nil || changed {
		t.Fatalf("WriteLock() after a no-op install = %v, %v; want no write", changed, err)
	}
	if got := readFile(t, home, LockFile); got != before {
		t.Fatalf("lockfile changed:\n%s\nwas:\n%s", got, before)
	}
	if st, _ := os.Stat(lockPath); !st.ModTime().Equal(old) {
		t.Fatalf("lockfile touched: mtime %v, want %v", st.ModTime(), old)
	}
}

func TestInstallPinsLockedCommitUpdateMovesIt(t *testing.T) {
	f := newFixture(t)
	home := f.env.Home()
	in := &Installer{Home: home}
	ctx := context.Background()
	lock1, err := in.Install(ctx, f.m, nil, Normal)
	if err != nil {
		t.Fatal(err)
	}
	f.advance()
	pdf2 := gitT(t, f.pdf.work, "rev-parse", "HEAD")
	skills2 := gitT(t, f.skills.work, "rev-parse", "HEAD")

	if drift, err := in.Check(ctx, f.m, lock1); err != nil || len(drift) != 0 {
		t.Fatalf("Check() after the branches moved = %q, %v; want none: the lock pins the commits", drift, err)
	}

	// Normal mode on a home that lost its skills reinstalls the locked commits.
	for _, dir := range []string{"skills/pdf", "skills/xlsx"} {
		if err := os.RemoveAll(filepath.Join(home, dir)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := in.Install(ctx, f.m, lock1, Normal)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, lock1) {
		t.Fatalf("normal install moved the lock:\n%+v\nwant %+v", got, lock1)
	}
	if s := readFile(t, home, "skills/pdf/SKILL.md") + readFile(t, home, "skills/xlsx/SKILL.md"); s != "pdf v1\nxlsx v1\n" {
		t.Fatalf("normal install content = %q, want the locked v1", s)
	}

	lock2, err := in.Install(ctx, f.m, lock1, Update)
	if err != nil {
		t.Fatal(err)
	}
	if lock2.Skills["pdf"].SHA != pdf2 || lock2.Skills["xlsx"].SHA != skills2 {
		t.Fatalf("update lock = %+v, want pdf %s and xlsx %s", lock2.Skills, pdf2, skills2)
	}
	if s := readFile(t, home, "skills/pdf/SKILL.md") + readFile(t, home, "skills/xlsx/SKILL.md") +
		readFile(t, home, "knowledge/handbook/README.md") + readFile(t, home, "knowledge/wiki/wiki/index.md"); s != "pdf v2\nxlsx v2\nhandbook v2\nindex v2\n" {
		t.Fatalf("update content = %q, want v2 everywhere", s)
	}
	if drift, err := in.Check(ctx, f.m, lock2); err != nil || len(drift) != 0 {
		t.Fatalf("Check(new lock) = %q, %v", drift, err)
	}
	drift, err := in.Check(ctx, f.m, lock1)
	if err != nil {
		t.Fatal(err)
	}
	want := `skill "pdf": installed commit ` + pdf2 + `, the lockfile has ` + f.pdf1
	if len(drift) != 5 || drift[0] != want {
		t.Fatalf("Check(old lock) = %q, want 5 lines starting with %q", drift, want)
	}
}

// TestFrozenRebuildsFreshHome is the done criterion: a fresh home rebuilt
// from agent.json and agent.lock in frozen mode has the locked commits,
// although every branch has moved on.
func TestFrozenRebuildsFreshHome(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	lock, err := (&Installer{Home: f.env.Home()}).Install(ctx, f.m, nil, Normal)
	if err != nil {
		t.Fatal(err)
	}
	f.advance()

	home := f.env.Home()
	in := &Installer{Home: home}
	got, err := in.Install(ctx, f.m, lock, Frozen)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, lock) {
		t.Fatalf("frozen install changed the lock:\n%+v\nwant %+v", got, lock)
	}
	for dir, sha := range map[string]string{
		"skills/pdf": f.pdf1, "skills/old-skill": f.legacy1, "knowledge/handbook": f.handbook1, "knowledge/wiki": f.wiki1,
	} {
		if head := gitT(t, filepath.Join(home, dir), "rev-parse", "HEAD"); head != sha {
			t.Errorf("%s at %s, want the locked %s", dir, head, sha)
		}
	}
	if s := readFile(t, home, "skills/xlsx/SKILL.md") + readFile(t, home, "knowledge/wiki/wiki/index.md"); s != "xlsx v1\nindex v1\n" {
		t.Errorf("frozen content = %q, want v1", s)
	}
	if b := gitT(t, filepath.Join(home, "knowledge/wiki"), "symbolic-ref", "HEAD"); b != "refs/heads/main" {
		t.Errorf("writable knowledge base HEAD = %s, want its branch", b)
	}
	if drift, err := in.Check(ctx, f.m, lock); err != nil || len(drift) != 0 {
		t.Fatalf("Check() of the rebuilt home = %q, %v", drift, err)
	}
}

func TestFrozenNotCovered(t *testing.T) {
	full := &Lock{
		Skills:    map[string]LockedSkill{"pdf": {Git: "github.com:acme/pdf", Ref: "main", SHA: sha1}},
		Knowledge: map[string]LockedKB{"kb": {Git: "github.com:acme/kb", Ref: "main", SHA: sha2}},
	}
	tests := []struct {
		name string
		m    *Manifest
		want string
	}{
		{"skill absent", &Manifest{Skills: []SkillEntry{{Source: "acme/pdf"}, {Source: "acme/x"}}},
			`lockfile does not cover manifest entry "x"`},
		{"skill ref changed", &Manifest{Skills: []SkillEntry{{Source: "acme/pdf@v2"}}},
			`lockfile does not cover manifest entry "pdf": the lockfile has github.com:acme/pdf@main, the manifest github.com:acme/pdf@v2`},
		{"skill folder changed", &Manifest{Skills: []SkillEntry{{Source: "acme/pdf/sub/pdf"}}},
			`lockfile does not cover manifest entry "pdf": the lockfile has github.com:acme/pdf@main, the manifest github.com:acme/pdf path sub/pdf@main`},
		{"knowledge repository changed", &Manifest{Knowledge: []KBEntry{{Label: "kb", Git: "github.com:other/kb"}}},
			`lockfile does not cover manifest entry "kb": the lockfile has github.com:acme/kb@main, the manifest github.com:other/kb@main`},
		{"writable knowledge base absent", &Manifest{AgentKnowledge: &KBEntry{Label: "wiki", Git: "github.com:acme/wiki"}},
			`lockfile does not cover manifest entry "wiki"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			in := &Installer{Home: home, Git: func(_ context.Context, _ string, args ...string) (string, error) {
				t.Errorf("frozen install ran git %q before checking the lock", args)
				return "", errors.New("unexpected")
			}}
			_, err := in.Install(context.Background(), tt.m, full, Frozen)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Install(frozen) error = %v\nwant %s", err, tt.want)
			}
			if !errors.Is(err, ErrNotCovered) {
				t.Fatalf("error %v is not ErrNotCovered", err)
			}
			if entries, _ := os.ReadDir(home); len(entries) != 0 {
				t.Fatalf("frozen install wrote %v before failing", entries)
			}
		})
	}
}

func TestInstallGitFailureNamesEntry(t *testing.T) {
	f := newFixture(t)
	home := f.env.Home()
	m := &Manifest{Skills: []SkillEntry{{Source: "acme/pdf"}, {Source: "acme/nope"}}}
	_, err := (&Installer{Home: home}).Install(context.Background(), m, nil, Normal)
	if err == nil {
		t.Fatal("Install() of a repository that does not exist succeeded")
	}
	for _, want := range []string{
		`install skill "nope" from https://github.com/acme/nope.git@main: git clone: fatal: `,
		"does not appear to be a git repository",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	var ge *GitError
	if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "Please make sure") {
		t.Errorf("error does not carry git's full standard error: %#v", ge)
	}
	if exists(home, "skills/nope") {
		t.Error("skills/nope exists after the failure")
	}
	if !exists(home, "skills/pdf/SKILL.md") {
		t.Error("the entry before the failure is not installed")
	}
	if entries, _ := os.ReadDir(filepath.Join(home, ".cache/deps/tmp")); len(entries) != 0 {
		t.Errorf("temporary directories left behind: %v", entries)
	}

	// A ref the repository lacks names the entry and quotes git too.
	m = &Manifest{Skills: []SkillEntry{{Source: "acme/pdf@nope"}}}
	_, err = (&Installer{Home: home}).Install(context.Background(), m, nil, Normal)
	if err == nil || !strings.Contains(err.Error(), `install skill "pdf" from https://github.com/acme/pdf.git@nope: git clone: `) ||
		!strings.Contains(err.Error(), "nope not found") {
		t.Fatalf("error = %v", err)
	}
	if got := readFile(t, home, "skills/pdf/SKILL.md"); got != "pdf v1\n" {
		t.Fatalf("a failed install damaged the installed skill: %q", got)
	}
}

func TestInstallRefKinds(t *testing.T) {
	f := newFixture(t)
	f.pdf.tag("v1")
	f.advance()
	tip := gitT(t, f.pdf.work, "rev-parse", "HEAD")
	tests := []struct{ name, ref, want string }{
		{"branch", "main", tip},
		{"annotated tag", "v1", f.pdf1},
		{"full commit", f.pdf1, f.pdf1},
		{"abbreviated commit", f.pdf1[:10], f.pdf1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := f.env.Home()
			in := &Installer{Home: home}
			m := &Manifest{Skills: []SkillEntry{{Source: "acme/pdf@" + tt.ref}, {Source: "acme/skills/office/docx@" + tt.ref}}}
			if tt.name == "annotated tag" || strings.Contains(tt.name, "commit") {
				m.Skills = m.Skills[:1] // the skills repository has neither
			}
			lock, err := in.Install(context.Background(), m, nil, Normal)
			if err != nil {
				t.Fatal(err)
			}
			if got := lock.Skills["pdf"].SHA; got != tt.want {
				t.Fatalf("locked %s, want %s", got, tt.want)
			}
			if head := gitT(t, filepath.Join(home, "skills/pdf"), "rev-parse", "HEAD"); head != tt.want {
				t.Fatalf("installed %s, want %s", head, tt.want)
			}
			if drift, err := in.Check(context.Background(), m, lock); err != nil || len(drift) != 0 {
				t.Fatalf("Check() = %q, %v", drift, err)
			}
		})
	}
}

func TestInstallKeepsWritableWork(t *testing.T) {
	f := newFixture(t)
	home := f.env.Home()
	in := &Installer{Home: home}
	ctx := context.Background()
	m := &Manifest{AgentKnowledge: f.m.AgentKnowledge}
	lock, err := in.Install(ctx, m, nil, Normal)
	if err != nil {
		t.Fatal(err)
	}
	wiki := filepath.Join(home, "knowledge/wiki")
	if err := os.WriteFile(filepath.Join(wiki, "wiki/new.md"), []byte("ingested\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, wiki, "add", "-A")
	gitT(t, wiki, "commit", "--quiet", "-m", "ingest")
	local := gitT(t, wiki, "rev-parse", "HEAD")

	drift, err := in.Check(ctx, m, lock)
	if err != nil || len(drift) != 1 || !strings.HasPrefix(drift[0], `agent_knowledge "wiki": installed commit `+local) {
		t.Fatalf("Check() after an ingest commit = %q, %v", drift, err)
	}
	for _, mode := range []Mode{Normal, Frozen} {
		got, err := in.Install(ctx, m, lock, mode)
		if err != nil {
			t.Fatal(err)
		}
		if head := gitT(t, wiki, "rev-parse", "HEAD"); head != local {
			t.Fatalf("%v install reset the writable knowledge base to %s", mode, head)
		}
		want := local
		if mode == Frozen {
			want = f.wiki1 // frozen never rewrites the lock
		}
		if got.AgentKnowledge.WikiSHA != want {
			t.Fatalf("%v install locked wiki_sha %s, want %s", mode, got.AgentKnowledge.WikiSHA, want)
		}
	}

	// Update fast-forwards onto the remote's new commits only when it can.
	f.wiki.commit(map[string]string{"wiki/index.md": "index v2\n"})
	_, err = in.Install(ctx, m, lock, Update)
	if err == nil || !strings.Contains(err.Error(), `install agent_knowledge "wiki"`) || !strings.Contains(err.Error(), "git merge: fatal: ") {
		t.Fatalf("Update of a diverged writable knowledge base: error %v", err)
	}
	gitT(t, wiki, "reset", "--quiet", "--hard", "origin/main")
	got, err := in.Install(ctx, m, lock, Update)
	if err != nil {
		t.Fatal(err)
	}
	if tip := gitT(t, f.wiki.work, "rev-parse", "HEAD"); got.AgentKnowledge.WikiSHA != tip {
		t.Fatalf("update locked %s, want the remote tip %s", got.AgentKnowledge.WikiSHA, tip)
	}

	// A checkout of another repository is refused, not overwritten.
	other := &Manifest{AgentKnowledge: &KBEntry{Label: "wiki", Git: "github.com:acme/pdf"}}
	if _, err := in.Install(ctx, other, nil, Normal); err == nil || !strings.Contains(err.Error(), `knowledge/wiki is a checkout of "https://github.com/acme/wiki.git"`) {
		t.Fatalf("error = %v", err)
	}
}
