package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// toolMessage is a model answer calling one tool.
func toolMessage(t *testing.T, id, name string, input any) *anthropic.Message {
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	raw := fmt.Sprintf(`{"id":"msg_%s","type":"message","role":"assistant","model":"test-model","stop_reason":"tool_use",`+
		`"content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}],"usage":{"input_tokens":1,"output_tokens":1}}`, id, id, name, in)
	var m anthropic.Message
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// script is a model that answers with steps in order, then "done." with
// no tool call; it records the tool results it is sent.
func script(steps ...*anthropic.Message) (modelFunc, *[]string) {
	var mu sync.Mutex
	var results []string
	i := 0
	return func(_ context.Context, p anthropic.MessageNewParams) (*anthropic.Message, error) {
		mu.Lock()
		defer mu.Unlock()
		if n := len(p.Messages); n > 0 {
			for _, b := range p.Messages[n-1].Content {
				if r := b.OfToolResult; r != nil {
					text := ""
					for _, c := range r.Content {
						if c.OfText != nil {
							text += c.OfText.Text
						}
					}
					results = append(results, fmt.Sprintf("%v %s", r.IsError.Value, text))
				}
			}
		}
		if i >= len(steps) {
			return textMessage("done."), nil
		}
		i++
		return steps[i-1], nil
	}, &results
}

func write(path, content string) map[string]string {
	return map[string]string{"file_path": path, "content": content}
}

// The sub-agent reads a raw file, writes wiki pages by relative path, is
// refused README.md (its tool result says so), and the ingest commits,
// pushes and records wiki_sha; a second ingest lists the raw files changed
// since first.
func TestIngestEndToEnd(t *testing.T) {
	ctx := context.Background()
	e := newKBEnv(t)
	f, client := newClient(t)
	f.Enqueue(
		fake.ToolUse("t1", "Read", map[string]string{"file_path": "raw/a.md"}),
		fake.ToolUse("t2", "Write", write("wiki/deploys.md", "# Deploys\nOn Tuesdays; roll back to the previous image tag.\n")),
		fake.ToolUse("t3", "Write", write(filepath.Join(e.kb, "wiki", "old.md"), "# Old page\nRefreshed.\n")),
		fake.ToolUse("t4", "Write", write("README.md", "# pwned\n")),
		fake.TextReply("Wrote wiki/deploys.md and refreshed wiki/old.md."),
	)
	out := &fake.Outbox{}
	if err := e.ingester(client).Ingest(ctx, "", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	head := e.remoteHead()
	want := "ingested 2 raw file(s); 2 wiki pages changed; pushed " + head[:7]
	if got := out.Posts(); len(got) != 1 || got[0] != want {
		t.Fatalf("replies = %q, want %q", got, want)
	}
	if s := gitT(t, "", "--git-dir", e.bare, "show", "main:wiki/deploys.md"); !strings.HasPrefix(s, "# Deploys") {
		t.Errorf("pushed wiki/deploys.md = %q", s)
	}
	if s := gitT(t, "", "--git-dir", e.bare, "show", "main:README.md"); s != "# Notes\nThe team's runbooks." {
		t.Errorf("README.md = %q", s)
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
	if len(reqs) != 5 {
		t.Fatalf("model requests = %d, want 5", len(reqs))
	}
	if names := reqs[0].ToolNames(); !reflect.DeepEqual(names, []string{"LS", "Glob", "Grep", "Read", "Write", "Edit"}) {
		t.Errorf("the sub-agent's tools are %v", names)
	}
	if sys := reqs[0].SystemText(); !strings.Contains(sys, mandate) || !strings.Contains(sys, "Only wiki/<name>.md can be written") {
		t.Errorf("system prompt lacks the mandate or the rules: %q", sys)
	}
	user := reqs[0].LastUserText()
	for _, s := range []string{"The team's runbooks.", "- raw/a.md (28 bytes)", "- raw/b.md (38 bytes)", "- wiki/old.md: Old page", "- wiki/intact.md: Intact"} {
		if !strings.Contains(user, s) {
			t.Errorf("user prompt lacks %q:\n%s", s, user)
		}
	}
	if strings.Contains(user, "Deploys happen on Tuesdays.") || strings.Contains(user, "not markdown") || strings.Contains(user, "Stale.") {
		t.Errorf("the prompt holds a file's body, not just the lists:\n%s", user)
	}
	if res, isErr, _ := lastToolResult(reqs[1]); isErr || !strings.Contains(res, "Deploys happen on Tuesdays.") {
		t.Errorf("Read raw/a.md = %q (error %v)", res, isErr)
	}
	if res, isErr, _ := lastToolResult(reqs[4]); !isErr || !strings.Contains(res, "README.md cannot be written: only wiki pages wiki/<name>.md may be written") {
		t.Errorf("Write README.md = %q (error %v)", res, isErr)
	}

	// New and changed raw files since the last synthesis come first.
	fake.WriteFiles(t, e.kb, map[string]string{"raw/c.md": "New material.\n", "raw/b.md": "Rollbacks changed.\n"})
	f.Enqueue(fake.TextReply("Nothing to change."))
	if err := e.ingester(client).Ingest(ctx, "", "U0MGR", &fake.Outbox{}); err != nil {
		t.Fatal(err)
	}
	user = f.Requests()[5].LastUserText()
	if !strings.Contains(user, "Raw files (3; the first 2 are new or changed since the wiki was last synthesised):\n- raw/b.md (19 bytes)\n- raw/c.md (14 bytes)\n- raw/a.md") {
		t.Errorf("changed raw files not first:\n%s", user)
	}
}

// lastToolResult is the text of the last tool_result of a request.
func lastToolResult(r fake.AnthropicRequest) (string, bool, bool) {
	msgs := r.ParsedMessages()
	if len(msgs) == 0 {
		return "", false, false
	}
	for _, c := range msgs[len(msgs)-1].Content {
		if c.Type == "tool_result" {
			return c.ResultText(), c.IsError, true
		}
	}
	return "", false, false
}

// Every path outside wiki/<name>.md is refused as a tool error, reads stay
// inside the knowledge base, and nothing outside wiki/ changes.
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
	var steps []*anthropic.Message
	bad := []string{"../SOUL.md", "../../SOUL.md", "raw/x.md", "raw/a.md", "wiki/../README.md", "/etc/x.md",
		filepath.Join(e.home, "SOUL.md"), "wiki/sub/x.md", "wiki/x.txt", "wiki/.hidden.md", `wiki\..\README.md`,
		"wiki/link.md", ".git/config"}
	for i, p := range bad {
		steps = append(steps, toolMessage(t, fmt.Sprint("w", i), "Write", write(p, evil)))
	}
	steps = append(steps,
		toolMessage(t, "e1", "Edit", map[string]string{"file_path": "raw/a.md", "old_string": "Deploys", "new_string": "pwned"}),
		toolMessage(t, "r1", "Read", map[string]string{"file_path": "../../SOUL.md"}),
		toolMessage(t, "r2", "Read", map[string]string{"file_path": "wiki/link.md"}),
		toolMessage(t, "r3", "Read", map[string]string{"file_path": ".git/config"}),
		toolMessage(t, "g1", "Grep", map[string]string{"pattern": "Persona", "path": ".."}),
		toolMessage(t, "ok", "Write", write("./wiki/ok.md", "# OK\n")),
	)
	m, results := script(steps...)
	out := &fake.Outbox{}
	if err := e.ingester(m).Ingest(ctx, "notes", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, r := range *results {
		if strings.HasPrefix(r, "true ") {
			refused++
		}
	}
	if want := len(bad) + 5; refused != want || len(*results) != want+1 || !strings.HasPrefix((*results)[want], "false wrote wiki/ok.md") {
		t.Errorf("%d refusals, want %d: %q", refused, want, *results)
	}
	if got := out.Posts(); len(got) != 1 || !strings.HasPrefix(got[0], "ingested 2 raw file(s); 1 wiki pages changed; pushed ") {
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
			out := &fake.Outbox{}
			if err := e.ingester(m).Ingest(context.Background(), tt.label, "U0MGR", out); err != nil {
				t.Fatal(err)
			}
			if got, want := out.Posts(), tt.want(e); len(got) != 1 || got[0] != want {
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
	resp := fake.ToolUse("t1", "Write", write("wiki/new.md", "# New\n"))
	resp.Gate = gate
	f.Enqueue(resp, fake.TextReply("done."))
	in := e.ingester(client)

	first, done := &fake.Outbox{}, make(chan error, 1)
	go func() { done <- in.Ingest(ctx, "", "U1", first) }()
	if err := f.WaitRequests(ctx, 1); err != nil { // the first holds the lock, in its model call
		t.Fatal(err)
	}
	second := &fake.Outbox{}
	if err := in.Ingest(ctx, "", "U2", second); err != nil {
		t.Fatal(err)
	}
	if got := second.Posts(); len(got) != 1 || got[0] != "another ingest is already running" {
		t.Fatalf("second replies = %q", got)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := first.Posts(); len(got) != 1 || got[0] != "ingested 2 raw file(s); 1 wiki pages changed; pushed "+e.remoteHead()[:7] {
		t.Fatalf("first replies = %q", got)
	}
	if n := len(f.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2", n)
	}
}

func TestIngestExpiresStaleJob(t *testing.T) {
	ctx := context.Background()
	e := newKBEnv(t)
	// A run that crashed while holding the lock.
	if _, err := e.store.AcquireIngest(ctx, "notes", "U0CRASH", ingest.DefaultStaleAfter); err != nil {
		t.Fatal(err)
	}
	m, _ := script(toolMessage(t, "t1", "Write", write("wiki/new.md", "# New")))
	in := e.ingester(m)
	out := &fake.Outbox{}
	if err := in.Ingest(ctx, "", "U1", out); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(ingest.DefaultStaleAfter + time.Millisecond)
	if err := in.Ingest(ctx, "", "U2", out); err != nil {
		t.Fatal(err)
	}
	got := out.Posts()
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
	out := &fake.Outbox{}
	err := e.ingester(client).Ingest(ctx, "", "U0MGR", out)
	var ue *pipeline.UserError
	if !errors.As(err, &ue) || !strings.HasPrefix(ue.Message, "ingest failed: model call: ") ||
		!strings.Contains(ue.Message, "prompt is too long") || strings.Contains(ue.Message, "\n") {
		t.Fatalf("err = %#v", err)
	}
	if got := out.Posts(); len(got) != 0 {
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

// A sub-agent that never finishes is stopped at the turn cap: the ingest
// fails with the reason, the job says so, and what it wrote is discarded.
func TestIngestTurnCap(t *testing.T) {
	e := newKBEnv(t)
	before := tree(t, e.kb)
	calls := 0
	m := modelFunc(func(context.Context, anthropic.MessageNewParams) (*anthropic.Message, error) {
		calls++
		if calls == 1 {
			return toolMessage(t, "w", "Write", write("wiki/half.md", "# Half\n")), nil
		}
		return toolMessage(t, fmt.Sprint("ls", calls), "LS", map[string]string{}), nil
	})
	err := e.ingester(m).Ingest(context.Background(), "", "U0MGR", &fake.Outbox{})
	var ue *pipeline.UserError
	if !errors.As(err, &ue) || ue.Message != "ingest failed: turn cap reached (30 model calls) before the model was done" {
		t.Fatalf("err = %v", err)
	}
	if calls != 30 {
		t.Errorf("%d model calls, want 30", calls)
	}
	if jobs := e.jobs(); len(jobs) != 1 || jobs[0] != "U0MGR failed turn cap reached (30 model calls) before the model was done" {
		t.Errorf("jobs = %q", jobs)
	}
	if !maps.Equal(before, tree(t, e.kb)) || e.remoteHead() != e.seed {
		t.Error("a failed ingest left its writes behind or pushed")
	}
}

func TestIngestNothingChanged(t *testing.T) {
	e := newKBEnv(t)
	m, _ := script(toolMessage(t, "t1", "Write", write("wiki/intact.md", "# Intact\nUnchanged.\n")))
	out := &fake.Outbox{}
	if err := e.ingester(m).Ingest(context.Background(), "", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	if got := out.Posts(); len(got) != 1 || got[0] != "ingested 2 raw file(s); 0 wiki pages changed; pushed "+e.seed[:7] {
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
		return textMessage("Nothing to change."), nil
	})
	in := e.ingester(m)
	in.Store, in.Heartbeat = bs, time.Millisecond
	out := &fake.Outbox{}
	if err := in.Ingest(context.Background(), "", "U0MGR", out); err != nil {
		t.Fatal(err)
	}
	if got := out.Posts(); len(got) != 1 || !strings.HasPrefix(got[0], "ingested ") {
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
	err := in.Ingest(context.Background(), "", "U0MGR", &fake.Outbox{})
	var ue *pipeline.UserError
	if !errors.As(err, &ue) || !strings.Contains(ue.Message, "the ingest lock was lost") {
		t.Fatalf("err = %v", err)
	}
	if e.remoteHead() != e.seed {
		t.Error("a run that lost its lock pushed")
	}
}
