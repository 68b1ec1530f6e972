package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/ingest"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/deps"
)

const (
	kbGit   = "git.example.com:acme/notes"
	mandate = "- Own the team's runbooks.\n- Refuse payroll questions."
	author  = "Ada <agent@localhost>"
)

// kbEnv is a runtime home whose writable knowledge base "notes" is a
// checkout of a local bare repository, reached through the production
// address https://git.example.com/acme/notes.git by an insteadOf rule in a
// git configuration of the test's own (without an identity, so commits use
// the Author fallback).
type kbEnv struct {
	t     *testing.T
	home  string
	kb    string // home/knowledge/notes
	bare  string
	seed  string // the bare repository's first commit
	store *store.Store
	clock *fake.Clock
}

var seedFiles = map[string]string{
	"README.md":      "# Notes\nThe team's runbooks.\n",
	"raw/a.md":       "Deploys happen on Tuesdays.\n",
	"raw/b.md":       "Rollbacks use the previous image tag.\n",
	"raw/notes.txt":  "not markdown: not read\n",
	"wiki/old.md":    "# Old page\nStale.\n",
	"wiki/gone.md":   "# Gone page\nObsolete.\n",
	"wiki/intact.md": "# Intact\nUnchanged.\n",
}

func newKBEnv(t *testing.T) *kbEnv {
	t.Helper()
	git := fake.NewGit(t, false) // no identity: commits use the Author fallback
	root := git.Root
	e := &kbEnv{t: t, home: filepath.Join(root, "home"), bare: git.Bare("git.example.com", "acme/notes")}
	e.kb = filepath.Join(e.home, "knowledge", "notes")
	e.seed = git.Seed(e.bare, seedFiles)
	git.Run("", "clone", "--quiet", "--branch", "main", "https://git.example.com/acme/notes.git", e.kb)
	fake.WriteFiles(t, e.home, map[string]string{"SOUL.md": "# Persona\n"})
	if err := deps.WriteManifest(filepath.Join(e.home, deps.ManifestFile),
		&deps.Manifest{AgentKnowledge: &deps.KBEntry{Label: "notes", Git: kbGit}}); err != nil {
		t.Fatal(err)
	}
	e.clock = fake.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := store.Open(context.Background(), filepath.Join(root, "db.sqlite"), store.Options{Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e.store = s
	return e
}

// ingester returns an Ingester of the home with model m.
func (e *kbEnv) ingester(m ingest.Model) *ingest.Ingester {
	return &ingest.Ingester{Home: e.home, Store: e.store, Model: m, Mandate: mandate, Author: author, Now: e.clock.Now}
}

// remoteHead is main of the bare repository.
func (e *kbEnv) remoteHead() string {
	return gitT(e.t, "", "--git-dir", e.bare, "rev-parse", "main")
}

// jobs lists the ingest jobs' label, status and reason, oldest first.
func (e *kbEnv) jobs() []string {
	e.t.Helper()
	rows, err := e.store.DB().QueryContext(context.Background(),
		"SELECT triggered_by, status, reason FROM kb_ingest_jobs ORDER BY started_at, rowid")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var by, status, reason string
		if err := rows.Scan(&by, &status, &reason); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, strings.TrimSuffix(by+" "+status+" "+reason, " "))
	}
	return out
}

// newClient is the production model client against a fake Messages API.
func newClient(t *testing.T) (*fake.Anthropic, *llm.Client) {
	t.Helper()
	f := fake.NewAnthropic(t)
	c, err := llm.New(llm.Config{BaseURL: f.URL(), APIKey: "sk-ant-test", MaxRetries: -1}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// modelFunc is a hand-written Model.
type modelFunc func(ctx context.Context, p anthropic.MessageNewParams) (*anthropic.Message, error)

func (f modelFunc) Send(ctx context.Context, p anthropic.MessageNewParams) (*anthropic.Message, error) {
	return f(ctx, p)
}
func (modelFunc) Model() string { return "test-model" }

// textMessage is a model answer holding text.
func textMessage(text string) *anthropic.Message {
	return &anthropic.Message{StopReason: anthropic.StopReasonEndTurn,
		Content: []anthropic.ContentBlockUnion{{Type: "text", Text: text}}}
}

// gitT runs git in dir and returns its trimmed output, failing the test on
// error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return fake.RunGit(t, dir, args...)
}

// tree lists every file under dir but .git with its content, to show what
// changed.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "-> " + target
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
