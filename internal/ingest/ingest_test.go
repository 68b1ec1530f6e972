package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/ingest"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

type page struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// answerJSON is a model answer writing files and deleting paths.
func answerJSON(t *testing.T, files []page, del []string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"files": files, "delete": del})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIngestEndToEnd(t *testing.T) {
	ctx := context.Background()
	e := newKBEnv(t)
	f, client := newClient(t)
	answer := answerJSON(t, []page{
		{"wiki/deploys.md", "# Deploys\nOn Tuesdays; roll back to the previous image tag.\n"},
		{"wiki/old.md", "# Old page\nRefreshed.\n"},
	}, []string{"wiki/gone.md"})
	f.Enqueue(fake.TextReply("Here it is:\n```json\n" + answer + "\n```\n"))
	out := &outbox{}

	if err := e.ingester(client).Ingest(ctx, "", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	head := e.remoteHead()
	want := "ingested 2 raw file(s); 3 wiki pages changed; pushed " + head[:7]
	if got := out.all(); len(got) != 1 || got[0] != want {
		t.Fatalf("replies = %q, want %q", got, want)
	}
	if local := gitT(t, e.kb, "rev-parse", "HEAD"); local != head {
		t.Errorf("checkout HEAD %s, remote main %s", local, head)
	}
	if s := gitT(t, "", "--git-dir", e.bare, "show", "main:wiki/deploys.md"); !strings.HasPrefix(s, "# Deploys") {
		t.Errorf("pushed wiki/deploys.md = %q", s)
	}
	if files := gitT(t, "", "--git-dir", e.bare, "ls-tree", "-r", "--name-only", "main", "wiki/"); files != "wiki/deploys.md\nwiki/intact.md\nwiki/old.md" {
		t.Errorf("pushed wiki/ = %q", files)
	}
	if who := gitT(t, "", "--git-dir", e.bare, "log", "-1", "--format=%an <%ae>", "main"); who != author {
		t.Errorf("commit author = %q, want the Author fallback %q", who, author)
	}
	lock, err := deps.LoadLock(filepath.Join(e.home, deps.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := (&deps.LockedAgentKB{Label: "notes", Git: kbGit, Ref: "main", WikiSHA: head}); !reflect.DeepEqual(lock.AgentKnowledge, want) {
		t.Errorf("lock agent_knowledge = %+v, want %+v", lock.AgentKnowledge, want)
	}
	if jobs := e.jobs(); !reflect.DeepEqual(jobs, []string{"U0MGR completed"}) {
		t.Errorf("jobs = %q", jobs)
	}

	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model requests = %d, want 1", len(reqs))
	}
	req := reqs[0]
	if names := req.ToolNames(); len(names) != 0 {
		t.Errorf("the sub-query offers tools %v", names)
	}
	if sys := req.SystemText(); !strings.Contains(sys, mandate) || !strings.Contains(sys, `"files"`) {
		t.Errorf("system prompt lacks the mandate or the answer format: %q", sys)
	}
	user := req.LastUserText()
	for _, s := range []string{"The team's runbooks.", `<file path="raw/a.md">`, "Deploys happen on Tuesdays.", "Rollbacks use", "- wiki/old.md: Old page", "- wiki/intact.md: Intact"} {
		if !strings.Contains(user, s) {
			t.Errorf("user prompt lacks %q:\n%s", s, user)
		}
	}
	if strings.Contains(user, "not markdown") || strings.Contains(user, "Stale.") {
		t.Errorf("user prompt holds more than README, raw/*.md and the wiki index:\n%s", user)
	}
}

func TestIngestRefusesPathsOutsideWiki(t *testing.T) {
	ctx := context.Background()
	e := newKBEnv(t)
	// A page that is a symlink out of the knowledge base, committed.
	if err := os.Symlink("../../../SOUL.md", filepath.Join(e.kb, "wiki", "link.md")); err != nil {
		t.Fatal(err)
	}
	gitT(t, e.kb, "add", "wiki/link.md")
	gitT(t, e.kb, "-c", "user.name=Seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "link")
	homeBefore := tree(t, e.home)
	evil := "# pwned\n"
	answer := answerJSON(t, []page{
		{"../SOUL.md", evil}, {"../../SOUL.md", evil}, {"raw/x.md", evil}, {"raw/a.md", evil},
		{"wiki/../README.md", evil}, {"/etc/x.md", evil}, {filepath.Join(e.home, "SOUL.md"), evil},
		{"wiki/sub/x.md", evil}, {"wiki/x.txt", evil}, {"wiki/.hidden.md", evil}, {`wiki\..\README.md`, evil},
		{"./wiki/y.md", evil}, {"wiki/link.md", evil}, {"wiki/ok.md", "# OK\n"},
	}, []string{"../SOUL.md", "raw/a.md", "README.md", "wiki/../README.md"})
	m := modelFunc(func(context.Context, anthropic.MessageNewParams) (*anthropic.Message, error) {
		return textMessage(answer), nil
	})
	var logs bytes.Buffer
	in := e.ingester(m)
	in.Log = slog.New(slog.NewTextHandler(&logs, nil))
	out := &outbox{}
	if err := in.Ingest(ctx, "notes", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "refused a page"); n != 17 {
		t.Errorf("refused %d paths, want 17:\n%s", n, logs.String())
	}
	if got := out.all(); len(got) != 1 || !strings.HasPrefix(got[0], "ingested 2 raw file(s); 1 wiki pages changed; pushed ") {
		t.Fatalf("replies = %q", got)
	}
	after := tree(t, e.home)
	if after["knowledge/notes/wiki/ok.md"] != "# OK\n" {
		t.Errorf("wiki/ok.md = %q", after["knowledge/notes/wiki/ok.md"])
	}
	delete(after, "knowledge/notes/wiki/ok.md")
	delete(after, deps.LockFile)
	if !maps.Equal(homeBefore, after) {
		for k, v := range after {
			if homeBefore[k] != v {
				t.Errorf("%s changed: %q", k, v)
			}
		}
		for k := range homeBefore {
			if _, ok := after[k]; !ok {
				t.Errorf("%s deleted", k)
			}
		}
	}
	if st := gitT(t, e.kb, "status", "--porcelain"); st != "" {
		t.Errorf("checkout not clean after ingest: %q", st)
	}
}

func TestIngestReplies(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *kbEnv)
		label string
		want  func(e *kbEnv) string
	}{
		{"no agent_knowledge", func(e *kbEnv) {
			if err := deps.WriteManifest(filepath.Join(e.home, deps.ManifestFile),
				&deps.Manifest{Knowledge: []deps.KBEntry{{Label: "docs", Git: "git.example.com:acme/docs"}}}); err != nil {
				t.Fatal(err)
			}
		}, "", func(*kbEnv) string { return "manifest.agent_knowledge not set" }},
		{"no manifest", func(e *kbEnv) {
			if err := os.Remove(filepath.Join(e.home, deps.ManifestFile)); err != nil {
				t.Fatal(err)
			}
		}, "", func(*kbEnv) string { return "manifest.agent_knowledge not set" }},
		{"KB dir missing", func(e *kbEnv) {
			if err := os.RemoveAll(e.kb); err != nil {
				t.Fatal(err)
			}
		}, "", func(e *kbEnv) string { return "KB dir " + e.kb + " does not exist" }},
		{"another label", func(*kbEnv) {}, "docs", func(*kbEnv) string {
			return "only the writable knowledge base `notes` can be ingested; `docs` is not it"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newKBEnv(t)
			tt.setup(e)
			m := modelFunc(func(context.Context, anthropic.MessageNewParams) (*anthropic.Message, error) {
				t.Error("the model was called")
				return nil, errors.New("unexpected")
			})
			out := &outbox{}
			if err := e.ingester(m).Ingest(context.Background(), tt.label, "U0MGR", out); err != nil {
				t.Fatal(err)
			}
			if got, want := out.all(), tt.want(e); len(got) != 1 || got[0] != want {
				t.Errorf("replies = %q, want %q", got, want)
			}
			if jobs := e.jobs(); len(jobs) != 0 {
				t.Errorf("jobs = %q, want none", jobs)
			}
		})
	}
}

func TestIngestConcurrentRunsOneAtATime(t *testing.T) {
	ctx := context.Background()
	e := newKBEnv(t)
	f, client := newClient(t)
	gate := make(chan struct{})
	resp := fake.TextReply(answerJSON(t, []page{{"wiki/new.md", "# New\n"}}, nil))
	resp.Gate = gate
	f.Enqueue(resp)
	in := e.ingester(client)

	first, done := &outbox{}, make(chan error, 1)
	go func() { done <- in.Ingest(ctx, "", "U1", first) }()
	if err := f.WaitRequests(ctx, 1); err != nil { // the first holds the lock, in its model call
		t.Fatal(err)
	}
	second := &outbox{}
	if err := in.Ingest(ctx, "", "U2", second); err != nil {
		t.Fatal(err)
	}
	if got := second.all(); len(got) != 1 || got[0] != "another ingest is already running" {
		t.Fatalf("second replies = %q", got)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := first.all(); len(got) != 1 || got[0] != "ingested 2 raw file(s); 1 wiki pages changed; pushed "+e.remoteHead()[:7] {
		t.Fatalf("first replies = %q", got)
	}
	if n := len(f.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1", n)
	}
}

func TestIngestExpiresStaleJob(t *testing.T) {
	ctx := context.Background()
	e := newKBEnv(t)
	// A run that crashed while holding the lock.
	if _, err := e.store.AcquireIngest(ctx, "notes", "U0CRASH", ingest.DefaultStaleAfter); err != nil {
		t.Fatal(err)
	}
	m := modelFunc(func(context.Context, anthropic.MessageNewParams) (*anthropic.Message, error) {
		return textMessage(`{"files":[{"path":"wiki/new.md","content":"# New"}]}`), nil
	})
	in := e.ingester(m)
	out := &outbox{}
	if err := in.Ingest(ctx, "", "U1", out); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(ingest.DefaultStaleAfter + time.Millisecond)
	if err := in.Ingest(ctx, "", "U2", out); err != nil {
		t.Fatal(err)
	}
	got := out.all()
	if len(got) != 2 || got[0] != "another ingest is already running" || !strings.HasPrefix(got[1], "ingested 2 raw file(s); 1 wiki pages changed; pushed ") {
		t.Fatalf("replies = %q", got)
	}
	if jobs := e.jobs(); !reflect.DeepEqual(jobs, []string{"U0CRASH expired heartbeat timeout", "U2 completed"}) {
		t.Errorf("jobs = %q", jobs)
	}
}

func TestIngestModelFailure(t *testing.T) {
	ctx := context.Background()
	e := newKBEnv(t)
	f, client := newClient(t)
	f.Enqueue(fake.APIError(400, "invalid_request_error", "prompt is too long"))
	before := tree(t, e.kb)
	out := &outbox{}
	err := e.ingester(client).Ingest(ctx, "", "U0MGR", out)
	var ue *pipeline.UserError
	if !errors.As(err, &ue) || !strings.HasPrefix(ue.Message, "ingest failed: model call: ") ||
		!strings.Contains(ue.Message, "prompt is too long") || strings.Contains(ue.Message, "\n") {
		t.Fatalf("err = %#v", err)
	}
	if got := out.all(); len(got) != 0 {
		t.Errorf("replies = %q; the failure is the pipeline's to post", got)
	}
	jobs := e.jobs()
	if len(jobs) != 1 || !strings.HasPrefix(jobs[0], "U0MGR failed model call: ") {
		t.Errorf("jobs = %q", jobs)
	}
	if !maps.Equal(before, tree(t, e.kb)) || e.remoteHead() != e.seed {
		t.Error("a failed ingest changed the knowledge base")
	}
	if _, err := os.Stat(filepath.Join(e.home, deps.LockFile)); !os.IsNotExist(err) {
		t.Errorf("a failed ingest wrote agent.lock: %v", err)
	}
	// The lock is released.
	if _, err := e.store.AcquireIngest(ctx, "notes", "U1", ingest.DefaultStaleAfter); err != nil {
		t.Errorf("acquire after failure: %v", err)
	}
}

func TestIngestBadAnswers(t *testing.T) {
	for name, text := range map[string]string{"no JSON": "I could not do it.", "bad JSON": `{"files": [`} {
		t.Run(name, func(t *testing.T) {
			e := newKBEnv(t)
			m := modelFunc(func(context.Context, anthropic.MessageNewParams) (*anthropic.Message, error) {
				return textMessage(text), nil
			})
			err := e.ingester(m).Ingest(context.Background(), "", "U0MGR", &outbox{})
			var ue *pipeline.UserError
			if !errors.As(err, &ue) || !strings.HasPrefix(ue.Message, "ingest failed: the model's answer") {
				t.Fatalf("err = %v", err)
			}
			if jobs := e.jobs(); len(jobs) != 1 || !strings.Contains(jobs[0], " failed ") {
				t.Errorf("jobs = %q", jobs)
			}
		})
	}
}

func TestIngestNothingChanged(t *testing.T) {
	e := newKBEnv(t)
	m := modelFunc(func(context.Context, anthropic.MessageNewParams) (*anthropic.Message, error) {
		return textMessage(`{"files":[{"path":"wiki/intact.md","content":"# Intact\nUnchanged.\n"}],"delete":["wiki/never.md"]}`), nil
	})
	out := &outbox{}
	if err := e.ingester(m).Ingest(context.Background(), "", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	if got := out.all(); len(got) != 1 || got[0] != "ingested 2 raw file(s); 0 wiki pages changed; pushed "+e.seed[:7] {
		t.Fatalf("replies = %q", got)
	}
	if e.remoteHead() != e.seed {
		t.Error("an ingest that changed nothing made a commit")
	}
	lock, _ := deps.LoadLock(filepath.Join(e.home, deps.LockFile))
	if lock.AgentKnowledge == nil || lock.AgentKnowledge.WikiSHA != e.seed {
		t.Errorf("lock agent_knowledge = %+v", lock.AgentKnowledge)
	}
}

// beatStore counts heartbeats, and can fail them as for an expired job.
type beatStore struct {
	*store.Store
	expired bool
	once    sync.Once
	beat    chan struct{} // closed at the first heartbeat
}

func (s *beatStore) HeartbeatIngest(ctx context.Context, jobID string) error {
	defer s.once.Do(func() { close(s.beat) })
	if s.expired {
		return store.ErrNotFound
	}
	return s.Store.HeartbeatIngest(ctx, jobID)
}

func TestIngestHeartbeats(t *testing.T) {
	e := newKBEnv(t)
	bs := &beatStore{Store: e.store, beat: make(chan struct{})}
	m := modelFunc(func(ctx context.Context, _ anthropic.MessageNewParams) (*anthropic.Message, error) {
		select { // hold the run until it has heartbeaten
		case <-bs.beat:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textMessage(`{"files":[]}`), nil
	})
	in := e.ingester(m)
	in.Store, in.Heartbeat = bs, time.Millisecond
	out := &outbox{}
	if err := in.Ingest(context.Background(), "", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	if got := out.all(); len(got) != 1 || !strings.HasPrefix(got[0], "ingested ") {
		t.Fatalf("replies = %q", got)
	}
}

func TestIngestLostLockFails(t *testing.T) {
	e := newKBEnv(t)
	bs := &beatStore{Store: e.store, beat: make(chan struct{}), expired: true}
	m := modelFunc(func(ctx context.Context, _ anthropic.MessageNewParams) (*anthropic.Message, error) {
		<-ctx.Done() // the lost lock cancels the run
		return nil, ctx.Err()
	})
	in := e.ingester(m)
	in.Store, in.Heartbeat = bs, time.Millisecond
	err := in.Ingest(context.Background(), "", "U0MGR", &outbox{})
	var ue *pipeline.UserError
	if !errors.As(err, &ue) || !strings.Contains(ue.Message, "the ingest lock was lost") {
		t.Fatalf("err = %v", err)
	}
	if e.remoteHead() != e.seed {
		t.Error("a run that lost its lock pushed")
	}
}
