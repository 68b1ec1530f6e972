package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/internal/publish"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

const (
	// DefaultHeartbeat is how often a running ingest proves it is alive
	// (the spec's 30 s).
	DefaultHeartbeat = 30 * time.Second
	// DefaultStaleAfter is how old a running job's heartbeat may get before
	// the next /ingest expires it: four missed heartbeats. One or two can
	// be missed by a live run (a write waiting out SQLite's 5 s busy
	// timeout, a paused VM); four means the process is gone, and a crashed
	// run then blocks /ingest for two minutes at most.
	DefaultStaleAfter = 4 * DefaultHeartbeat
)

// Replies of /ingest that are not a failure.
const (
	ReplyNotSet  = "manifest.agent_knowledge not set"
	ReplyRunning = "another ingest is already running"
)

// Store is the ingest job table (*store.Store).
type Store interface {
	// AcquireIngest returns a new running job's id, or an error matching
	// store.ErrIngestRunning when a live job holds the label's lock.
	AcquireIngest(ctx context.Context, label, by string, staleAfter time.Duration) (string, error)
	// HeartbeatIngest returns an error matching store.ErrNotFound when the
	// job is no longer running: it lost the lock.
	HeartbeatIngest(ctx context.Context, jobID string) error
	// FinishIngest ends the job (completed or failed), releasing the lock.
	FinishIngest(ctx context.Context, jobID, status, reason string) error
}

var _ Store = (*store.Store)(nil)

// Model sends one request to the model (*llm.Client).
type Model interface {
	Send(ctx context.Context, p anthropic.MessageNewParams) (*anthropic.Message, error)
	Model() string
}

// Ingester runs /ingest. It implements commands.Ingester.
type Ingester struct {
	// Home is the runtime home (AGENT_HOME).
	Home  string
	Store Store
	Model Model
	// Mandate is the persona's mandate, the first part of the sub-query's
	// system prompt.
	Mandate string
	// Git runs git; nil means [deps.ExecGit].
	Git deps.Git
	// Author ("Name <email>", AGENT_GIT_AUTHOR) signs the commit only when
	// git has no identity configured.
	Author string
	// Heartbeat is how often a running job's heartbeat is written; zero
	// means [DefaultHeartbeat].
	Heartbeat time.Duration
	// StaleAfter is how old another job's heartbeat must be for this run to
	// expire it; zero means [DefaultStaleAfter].
	StaleAfter time.Duration
	// Log receives a line per run and the refused paths; nil discards.
	Log *slog.Logger
	// Now is the clock of the run's logged duration; nil means time.Now.
	Now func() time.Time
}

// errLostLock cancels a run whose job was expired under it.
var errLostLock = errors.New("the ingest lock was lost: the job expired after missed heartbeats")

// Ingest runs /ingest for label (empty: the writable knowledge base) on
// behalf of userID and posts the outcome to out. Refusals (no writable
// knowledge base, another label, a missing directory, another ingest
// running) are replies, not errors. A failure once the lock is held marks
// the job failed, releases the lock and returns a *pipeline.UserError
// whose message is "ingest failed: <reason>".
//
// When the model changes nothing, nothing is committed; the branch is
// still pushed (which delivers commits an earlier failed push left behind)
// and the reply says 0 wiki pages changed with the pushed HEAD.
func (in *Ingester) Ingest(ctx context.Context, label, userID string, out pipeline.Outbox) error {
	m, err := deps.LoadManifest(filepath.Join(in.Home, deps.ManifestFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return userError(err)
	}
	ak := m.AgentKnowledge
	if ak == nil {
		return say(ctx, out, ReplyNotSet)
	}
	if label == "" {
		label = ak.Label
	}
	if label != ak.Label {
		return say(ctx, out, fmt.Sprintf("only the writable knowledge base `%s` can be ingested; `%s` is not it", ak.Label, label))
	}
	dir := filepath.Join(in.Home, "knowledge", label)
	// The knowledge base is worked on where it really is, and only if
	// that is inside knowledge/ (a symlink there may not lead out).
	rel, err := tools.Confined{Dir: filepath.Join(in.Home, "knowledge")}.Resolve(label)
	if err != nil || rel == "." {
		return say(ctx, out, fmt.Sprintf("KB dir %s leads outside the knowledge folder: refused", dir))
	}
	dir = filepath.Join(in.Home, "knowledge", rel)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return say(ctx, out, fmt.Sprintf("KB dir %s does not exist", dir))
	}
	jobID, err := in.Store.AcquireIngest(ctx, label, userID, in.staleAfter())
	if errors.Is(err, store.ErrIngestRunning) {
		return say(ctx, out, ReplyRunning)
	}
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	log := in.log().With("label", label, "job_id", jobID, "user_id", userID)
	start := in.now()
	log.InfoContext(ctx, "ingest started")

	runCtx, cancel := context.WithCancelCause(ctx)
	stop := in.heartbeat(runCtx, cancel, jobID, log)
	line, err := in.run(runCtx, *ak, dir, userID, log)
	stop()
	cancel(nil)
	if err != nil && errors.Is(context.Cause(runCtx), errLostLock) {
		err = fmt.Errorf("%w: %w", errLostLock, err)
	}
	// Record the outcome even when ctx was cancelled: the lock must go.
	finishCtx := context.WithoutCancel(ctx)
	if err != nil {
		reason := publish.OneLine(err)
		if ferr := in.Store.FinishIngest(finishCtx, jobID, store.IngestFailed, reason); ferr != nil {
			log.WarnContext(ctx, "ingest: record failure", "err", ferr)
		}
		log.WarnContext(ctx, "ingest failed", "err", err, "duration_ms", in.now().Sub(start).Milliseconds())
		return userError(err)
	}
	if ferr := in.Store.FinishIngest(finishCtx, jobID, store.IngestCompleted, ""); ferr != nil {
		// The push happened; only the job row could not say so.
		log.WarnContext(ctx, "ingest: record completion", "err", ferr)
	}
	log.InfoContext(ctx, "ingest completed", "result", line, "duration_ms", in.now().Sub(start).Milliseconds())
	return say(ctx, out, line)
}

// run is the ingest proper, lock held: read, synthesise, write wiki/,
// commit, push, record wiki_sha. It returns the reply line.
func (in *Ingester) run(ctx context.Context, ak deps.KBEntry, dir, userID string, log *slog.Logger) (string, error) {
	co := publish.Checkout{Dir: dir, Git: in.Git, Author: in.Author, Log: log}
	if err := co.Check(); err != nil {
		return "", err
	}
	src, err := readSources(dir)
	if err != nil {
		return "", err
	}
	if len(src.raw) > 0 {
		src.changedFirst(in.changedRaw(ctx, co, log))
		if err := in.synthesise(ctx, ak.Label, dir, src, log); err != nil {
			// Nothing half-done stays behind for the next commit.
			in.discardWiki(ctx, co, log)
			return "", err
		}
	}
	changed := 0
	if _, err := os.Lstat(filepath.Join(dir, "wiki")); err == nil {
		msg := fmt.Sprintf("ingest: synthesise %d raw file(s) into wiki/ (requested by %s)", len(src.raw), userID)
		committed, err := co.Commit(ctx, msg, "wiki")
		if err != nil {
			return "", err
		}
		if committed {
			files, err := co.Changed(ctx, "HEAD", "wiki")
			if err != nil {
				return "", err
			}
			changed = len(files)
		}
	}
	ref := ak.RefOrDefault()
	if err := co.Push(ctx, ref); err != nil {
		return "", err
	}
	head, err := co.Head(ctx)
	if err != nil {
		return "", err
	}
	lockPath := filepath.Join(in.Home, deps.LockFile)
	lock, err := deps.LoadLock(lockPath)
	if err != nil {
		return "", err
	}
	lock.AgentKnowledge = &deps.LockedAgentKB{Label: ak.Label, Git: ak.Git, Ref: ref, WikiSHA: head}
	if _, err := deps.WriteLock(lockPath, lock); err != nil {
		return "", err
	}
	return fmt.Sprintf("ingested %d raw file(s); %d wiki pages changed; pushed %s", len(src.raw), changed, publish.Short(head)), nil
}

// changedRaw are the raw files new or changed since the wiki was last
// synthesised (the lockfile's wiki_sha), committed or not; nil when that
// cannot be told (then no file is put first).
func (in *Ingester) changedRaw(ctx context.Context, co publish.Checkout, log *slog.Logger) map[string]bool {
	lock, err := deps.LoadLock(filepath.Join(in.Home, deps.LockFile))
	if err != nil || lock.AgentKnowledge == nil || lock.AgentKnowledge.WikiSHA == "" {
		return nil
	}
	changed := map[string]bool{}
	for _, args := range [][]string{
		{"diff", "--name-only", "--no-renames", lock.AgentKnowledge.WikiSHA, "--", "raw"},
		{"ls-files", "--others", "--exclude-standard", "--", "raw"},
	} {
		out, err := in.gitIn(ctx, co.Dir, args...)
		if err != nil {
			log.InfoContext(ctx, "ingest: changed raw files not known", "err", err)
			return nil
		}
		for _, f := range strings.Fields(out) {
			changed[f] = true
		}
	}
	return changed
}

// discardWiki puts wiki/ back as committed after a failed synthesis.
func (in *Ingester) discardWiki(ctx context.Context, co publish.Checkout, log *slog.Logger) {
	ctx = context.WithoutCancel(ctx)
	for _, args := range [][]string{{"checkout", "--", "wiki"}, {"clean", "-fdq", "--", "wiki"}} {
		if _, err := in.gitIn(ctx, co.Dir, args...); err != nil {
			log.InfoContext(ctx, "ingest: wiki/ not restored", "err", err)
		}
	}
}

func (in *Ingester) gitIn(ctx context.Context, dir string, args ...string) (string, error) {
	if in.Git != nil {
		return in.Git(ctx, dir, args...)
	}
	return deps.ExecGit(ctx, dir, args...)
}

// heartbeat writes the job's heartbeat every Heartbeat until stop is
// called. When the job is found expired it cancels ctx with errLostLock:
// another run may hold the lock now.
func (in *Ingester) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, jobID string, log *slog.Logger) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	every := in.Heartbeat
	if every <= 0 {
		every = DefaultHeartbeat
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := in.Store.HeartbeatIngest(ctx, jobID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				cancel(errLostLock)
				return
			case err != nil && ctx.Err() == nil:
				log.WarnContext(ctx, "ingest: heartbeat", "err", err) // the next one may succeed
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func (in *Ingester) staleAfter() time.Duration {
	if in.StaleAfter > 0 {
		return in.StaleAfter
	}
	return DefaultStaleAfter
}

func (in *Ingester) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

func (in *Ingester) log() *slog.Logger {
	if in.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return in.Log
}

func say(ctx context.Context, out pipeline.Outbox, text string) error {
	_, err := out.Post(ctx, text)
	return err
}

// userError is the chat-safe form of a failed ingest.
func userError(err error) error {
	return &pipeline.UserError{Message: "ingest failed: " + publish.OneLine(err), Err: err}
}
