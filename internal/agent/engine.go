package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gopool"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// Model sends one request to the model.
type Model interface {
	Send(ctx context.Context, p anthropic.MessageNewParams) (*anthropic.Message, error)
	Model() string
}

// History is the persisted conversation of the sessions.
type History interface {
	History(ctx context.Context, sessionID string) ([]store.Message, error)
	AppendAnswer(ctx context.Context, sessionID string, a store.Answer, msgs ...store.Message) error
	// RecordUsage stores one model call's tokens in a write of their own:
	// model_usage, the one record of tokens (usage.go).
	RecordUsage(ctx context.Context, r store.UsageRecord) error
	ReplaceHistory(ctx context.Context, sessionID, summary string, keep []store.Message) error
}

// Metrics are the engine's instruments; nil fields are skipped.
type Metrics struct {
	Turns        *prometheus.CounterVec // outcome
	TurnDuration prometheus.Observer
	StopGuard    prometheus.Counter
	ToolCalls    *prometheus.CounterVec // tool, outcome
	ToolDuration *prometheus.HistogramVec
}

// Gate decides whether a tool call may run (permission modes, approval
// cards). A refusal is the Result the model reads.
type Gate interface {
	Check(ctx context.Context, t *pipeline.Turn, tool string, input json.RawMessage) (bool, tools.Result, error)
}

// Budget holds turns to the persona's budgets (internal/budget.Guard):
// Admit is asked before each model call of a turn, the first time before
// the message's files are saved (false: the turn stops there, the thread
// told why, nothing saved; show is called before anything is posted),
// Spent is told each call's tokens and returns their row of model_usage,
// which the engine stores like any call's (usage.go).
type Budget interface {
	Admit(ctx context.Context, t *pipeline.Turn, show func()) (bool, error)
	Spent(t *pipeline.Turn, model string, u store.Usage) store.UsageRecord
}

// Status shows what the agent is doing in the thread (the assistant status
// indicator); "" clears it. Errors are the caller's to log.
type Status func(ctx context.Context, channelID, threadTS, status string) error

// Prompt builds the system prompt of a turn: static is byte-stable across
// every turn of the persona (baseline + persona), thread is stable within
// the thread (the channel's override and the thread's facts).
type Prompt func(t *pipeline.Turn) (static, thread string)

// Options configure an Engine.
type Options struct {
	Model   Model
	History History
	Tools   *tools.Registry
	Prompt  Prompt
	// Gate is consulted before every tool call; nil allows everything.
	Gate Gate
	// Budget, when set, records each model call's tokens and stops turns
	// at the persona's budgets.
	Budget Budget
	// Status, when set, shows the agent's activity in DM threads.
	Status Status
	// Sessions, when set, moves the thread's agent session on the
	// platform as each turn runs (session_view.go): processing (titled
	// when the session is new), suspended while a card waits, active once
	// answered. Where it fails with pipeline.ErrNoAgentSessions, the turn
	// shows the status line instead, as before agent sessions.
	Sessions func(ctx context.Context, u pipeline.SessionUpdate) error
	// NewDMThread, when set, is told when a turn opens a new session in a
	// DM (the persona's suggested prompts are offered there).
	NewDMThread func(ctx context.Context, channelID string)
	// Attach, when set, saves the files attached to the turn's message
	// into the thread's workspace (tools.Attachments.Save), once Budget
	// admitted the turn (a refused one saves nothing): its note is
	// added to the user's words, and the files it shows (images, PDFs)
	// follow them as content blocks (attachments.go).
	Attach func(ctx context.Context, t *pipeline.Turn) (tools.Attached, error)
	// Load reads a shown file back from the thread's workspace, for each
	// request that carries it (tools.Attachments.Load); its error is why
	// the file is not shown. Nil: shown files are named, not shown.
	Load func(threadKey string, s tools.Shown) ([]byte, error)
	// Unseen, when set, gives a turn whose event carries an unseen mark
	// (pipeline.Event.Unseen) the thread's messages the bot had not seen:
	// they go before the person's message, in the same write.
	Unseen ThreadContext
	// ModelOf, when set, is the model of a turn's requests (/model: the
	// thread's choice); "" or nil means Model's own.
	ModelOf func(ctx context.Context, t *pipeline.Turn) string
	// FirstTurn, when set, is what a thread's first turn carries of
	// memory (memory.Memories.FirstTurn): the memories most relevant to
	// the first message in its conversation and the persona-wide ones, as
	// text blocks before the person's words (the runtime's lines, each
	// memory's words in its author's envelope); none adds nothing. They go
	// into the messages, after the cached prefix (tools, system prompt),
	// which stays byte-identical.
	FirstTurn func(ctx context.Context, channelID, text string) []string
	// CompactAt is the prompt size (tokens) past which the history is
	// compacted after the turn; 0 means 150,000.
	CompactAt int64
	// Self is the bot's identity, for stripping its mention from the
	// user's words.
	Self func() pipeline.Identity
	// MaxTurns caps turns running at once across threads (AGENT_MAX_TURNS).
	// A turn waiting for a person's decision on a card does not count: it
	// gives its place back for the wait (pipeline.Slot).
	MaxTurns int
	// MaxSteps caps model calls within one turn.
	MaxSteps int
	// MaxTokens is max_tokens of each request.
	MaxTokens int64
	// Redact scrubs secrets from everything that goes back to the model:
	// tool results, and the model's own text and tool inputs as the
	// history keeps them.
	Redact  func(string) string
	Tracer  trace.Tracer
	Metrics Metrics
	Log     *slog.Logger
	Now     func() time.Time
	// OnToolCall, when set, is told of every tool call once it ended: the
	// tool, its input as the model gave it, its result (already scrubbed of
	// the runtime's secrets) and its outcome (ok, refused, error, aborted,
	// unknown). The simulator's transcripts use it.
	OnToolCall func(name string, input json.RawMessage, res tools.Result, outcome string)
	// Stream shows replies while the model writes them, where the turn's
	// Outbox can (AGENT_STREAM=auto). StreamSettled is what of a reply's
	// text may be shown while more is coming: redacted, less whatever text
	// to come could still turn into a credential or a redacted match
	// (redact.Redactor.Settled). Without it, a tail of StreamHoldback bytes
	// (at least 64) of the redacted text is held back, which a pattern
	// spanning lines outruns.
	Stream         bool
	StreamSettled  func(text string) string
	StreamHoldback int
	// Tasks, when set, shows the turn's work as it happens: each tool
	// call a task of a streamed message in the thread, a card's wait a
	// task of its own (tasks.go). Where it fails with pipeline.ErrNoTasks,
	// the turn shows the status line instead, as before tasks.
	Tasks pipeline.TaskPoster
}

type streamsKey struct{}

// replyStreams returns the observer that streams the replies of one model
// call, or nil when streaming is off or the turn's Outbox cannot.
// ready is waited for before a stream shows anything.
func (e *Engine) replyStreams(ctx context.Context, t *pipeline.Turn, ready func()) *replyStreams {
	st, ok := t.Out.(pipeline.Streamer)
	if !e.o.Stream || !ok {
		return nil
	}
	settled := e.o.StreamSettled
	if settled == nil {
		settled = heldBack(e.o.Redact, max(e.o.StreamHoldback, minHoldback))
	}
	return &replyStreams{ctx: ctx, streamer: st, ready: ready, settled: settled, now: e.o.Now, calls: map[string]*replyCall{}}
}

// Engine runs agent turns. It implements pipeline.Agent.
type Engine struct {
	o     Options
	slots chan struct{}
	// tools are the registry's tools converted at version toolsAt: a
	// tool server listed after start (a first sign-in) adds tools, and
	// the next request carries them.
	toolsMu sync.Mutex
	tools   []anthropic.ToolUnionParam
	toolsAt uint64

	mu      sync.Mutex
	running map[string]runningTurn // thread key → its running turn

	bg   sync.WaitGroup // work a turn left running beside it (beside, writeBehind)
	work *gopool.Pool   // the goroutines that run it

	static atomic.Pointer[encodedBlock] // the last static system block (staticBlock)

	// waits, when set (by tests: export_test.go), is told each time a
	// turn starts to wait: for a slot, for its first status call, for a
	// message or tool result written behind it. A test learns that a
	// turn is blocked from it rather than by sleeping.
	waits func(what string)
}

// Things a turn waits for, as told to Engine.waits.
const (
	waitSlot   = "slot"
	waitStatus = "status"
	waitWrite  = "write"
)

// waiting tells the test, if any, that a turn starts to wait for what.
func (e *Engine) waiting(what string) {
	if e.waits != nil {
		e.waits(what)
	}
}

// Wait waits for the work turns left running beside them, and lets the
// goroutines that ran it end: call it after the last turn ended and
// before the store closes.
func (e *Engine) Wait() {
	e.bg.Wait()
	e.work.Close()
}

// The work beside turns (their writes behind, their usage) runs on
// goroutines that wait a while for the next: that work goes down into
// SQLite, whose frames grow a new goroutine's stack by copying it three
// or four times, for every write (see gopool).
const (
	besideWorkers = 4
	besideWait    = 2 * time.Second
)

var _ pipeline.Agent = (*Engine)(nil)

// New returns an Engine.
func New(o Options) (*Engine, error) {
	if o.Model == nil || o.History == nil || o.Tools == nil || o.Prompt == nil || o.Self == nil || o.Tracer == nil || o.Log == nil {
		return nil, errors.New("agent: New needs Model, History, Tools, Prompt, Self, Tracer and Log")
	}
	if o.MaxTurns < 1 {
		o.MaxTurns = 8
	}
	if o.MaxSteps < 1 {
		o.MaxSteps = 40
	}
	if o.MaxTokens < 1 {
		o.MaxTokens = 8192
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	if o.CompactAt <= 0 {
		o.CompactAt = 150_000
	}
	e := &Engine{o: o, slots: make(chan struct{}, o.MaxTurns), running: map[string]runningTurn{},
		work: gopool.New(besideWorkers, besideWait)}
	e.toolsAt = o.Tools.Version()
	e.tools = toolParams(o.Tools.List())
	return e, nil
}

// Messages of the runtime to the user, safe to show in the chat.
const (
	msgUnavailable = "The model is unavailable right now, so I can't answer. Please try again in a few minutes."
	msgTooLong     = "This thread has grown too long for me to continue. Please start a new thread."
	msgMaxSteps    = "I stopped after %d steps without finishing. Tell me how to continue."
	// stopGuardText is sent back to the model once when it ends a turn
	// without having replied through the chat tool.
	stopGuardText = "[runtime] You ended your turn without posting anything, so the person sees nothing. " +
		"Answer now through the mcp__agent_chat__reply tool; plain text is never shown."
)

// turnState is what a turn's parts tell each other while it runs.
type turnState struct {
	mu      sync.Mutex
	replies int // replies posted
	// status is whether an assistant status set by this turn may still
	// show: set by a status, undone by a reply (the platform clears the
	// status when the app posts in the thread).
	status bool
	// view is the turn's agent session.
	view *sessionView
	// tasks shows the turn's work as tasks (tasks.go).
	tasks *taskView
	// admitted is set when the budgets admitted the turn before its
	// message's files were saved: its first model call is not asked again.
	admitted bool
}

func (s *turnState) replied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replies
}

type stateKey struct{}

// tasksOf returns the task view of the turn running in ctx, or nil.
func tasksOf(ctx context.Context) *taskView {
	if s, ok := ctx.Value(stateKey{}).(*turnState); ok {
		return s.tasks
	}
	return nil
}

// MarkReplied records that the agent posted a reply in the current turn; the
// chat tool server calls it.
func MarkReplied(ctx context.Context) {
	if s, ok := ctx.Value(stateKey{}).(*turnState); ok {
		s.mu.Lock()
		s.replies++
		s.status = false
		s.mu.Unlock()
	}
}

// Turn runs one agent turn: it persists the user's message, then calls the
// model and runs the tools it asks for until the model ends its turn
// (turn.go has the phases).
func (e *Engine) Turn(ctx context.Context, t *pipeline.Turn) (err error) {
	// The turn's place among the MaxTurns: the code that waits for a
	// person gives it back meanwhile (pipeline.Slot).
	slot := &turnSlot{slots: e.slots, waiting: func() { e.waiting(waitSlot) }}
	if err := slot.Acquire(ctx); err != nil {
		return err
	}
	defer slot.Release()
	ctx = pipeline.NewContextWithSlot(ctx, slot)

	ctx, r, after, unregister := e.register(ctx, t)
	defer unregister()
	defer func() { r.end(err) }()

	// The session's first status goes out while the history loads and
	// the model is asked; nothing the turn shows goes before it is over.
	// Whatever happens next, the session is left active.
	ctx, msgs, run, err := r.prepare(ctx, after)
	defer r.state.view.finish(ctx)
	if err != nil || !run {
		return err
	}
	return r.run(ctx, msgs)
}

// userText is what the model reads of the user's message: their words
// without the bot's mention, and the note about their attachments (which
// names their files), in the envelope that says who wrote them
// (pipeline.Envelope).
func (e *Engine) userText(t *pipeline.Turn, note string) string {
	words := pipeline.StripMention(t.Event.Text, e.o.Self().UserID)
	if note != "" {
		words += "\n\n" + note
	}
	return pipeline.Envelope(t.Event.UserID, senderRole(t), words)
}

// senderRole is the envelope role of the turn's sender: bot for a bot's
// post, scheduled for a scheduled run, else the role the auth stage resolved (member when none).
func senderRole(t *pipeline.Turn) string {
	if t.Access.Role == pipeline.RolePeer {
		return string(pipeline.RolePeer) // a peer's post that mentions the persona
	}
	if t.Event.BotID != "" {
		return pipeline.EnvelopeBot
	}
	if t.Event.Kind == pipeline.KindSchedule {
		// A run comes from the creator's schedule, not from their words
		// now: the model reads it as such.
		return pipeline.EnvelopeScheduled
	}
	return pipeline.EnvelopeRole(string(t.Access.Role))
}

func (e *Engine) modelError(err error, outcome *string) error {
	switch {
	case errors.Is(err, llm.ErrContextTooLong):
		*outcome = "context_too_long"
		return &pipeline.UserError{Message: msgTooLong, Err: err}
	case errors.Is(err, llm.ErrUnavailable):
		*outcome = "model_unavailable"
		return &pipeline.UserError{Message: msgUnavailable, Err: err}
	}
	return fmt.Errorf("model: %w", err)
}

// send makes one model request. The request is built so that its bytes are
// stable from turn to turn: tools (sorted, last one a cache breakpoint),
// system (static part, then the thread's part, a breakpoint on the last),
// the history, and a rolling breakpoint on the last message's last block.
func (e *Engine) send(ctx context.Context, static, thread string, msgs []anthropic.MessageParam) (*anthropic.Message, error) {
	system := []anthropic.TextBlockParam{e.staticBlock(static, thread == "")}
	if thread != "" {
		system = append(system, anthropic.TextBlockParam{Text: thread,
			CacheControl: anthropic.NewCacheControlEphemeralParam()})
	}

	last := msgs[len(msgs)-1].Content
	if cc := last[len(last)-1].GetCacheControl(); cc != nil {
		*cc = anthropic.NewCacheControlEphemeralParam()
		defer func() { *cc = anthropic.CacheControlEphemeralParam{} }()
	}
	return e.o.Model.Send(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(e.modelOf(ctx)),
		MaxTokens: e.o.MaxTokens,
		System:    system,
		Tools:     e.toolParams(),
		Messages:  mergeRoles(msgs),
	})
}

// toolParams are the registry's tools as the request carries them,
// converted again only when the registry changed.
func (e *Engine) toolParams() []anthropic.ToolUnionParam {
	e.toolsMu.Lock()
	defer e.toolsMu.Unlock()
	if v := e.o.Tools.Version(); v != e.toolsAt {
		e.tools, e.toolsAt = toolParams(e.o.Tools.List()), v
	}
	return e.tools
}

// staticBlock is the system prompt's static part, with the cache
// breakpoint when nothing follows it, as raw JSON encoded once: it is the
// persona's whole prompt, the same on every call, and the longest text a
// request encodes.
func (e *Engine) staticBlock(text string, breakpoint bool) anthropic.TextBlockParam {
	if b := e.static.Load(); b != nil && b.breakpoint == breakpoint && b.text == text {
		return param.Override[anthropic.TextBlockParam](b.raw)
	}
	block := anthropic.TextBlockParam{Text: text}
	if breakpoint {
		block.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	raw, err := block.MarshalJSON()
	if err != nil {
		return block
	}
	e.static.Store(&encodedBlock{text: text, breakpoint: breakpoint, raw: raw})
	return param.Override[anthropic.TextBlockParam](json.RawMessage(raw))
}

// encodedBlock is a system block and its JSON.
type encodedBlock struct {
	text       string
	breakpoint bool
	raw        json.RawMessage
}

// writeBehind appends rows to the session's history in the background,
// then runs then (if any) once they are stored; the channel gets the
// write's outcome. The write starts at once, so what it stores is as
// durable as when the turn waited for it; the turn's next write, and its
// end, wait for it (turn.caughtUp). The caller encodes the rows before
// the request that follows, which marks the message's last block (the
// cache breakpoint) in place.
func (e *Engine) writeBehind(ctx context.Context, sid string, rows []store.Message, then func()) <-chan error {
	done := make(chan error, 1)
	e.bg.Add(1)
	e.work.Go(func() {
		defer e.bg.Done()
		err := e.appendRows(ctx, sid, store.Answer{}, rows)
		if err == nil && then != nil {
			then()
		}
		done <- err
	})
	return done
}

// persist appends messages to the session's history.
func (e *Engine) persist(ctx context.Context, sid string, msgs ...anthropic.MessageParam) error {
	return e.persistEvent(ctx, sid, "", "", msgs...)
}

// persistEvent appends messages answering the chat event eventID ("" for
// none), whose message is ts, to the session's history (eventRows).
func (e *Engine) persistEvent(ctx context.Context, sid, eventID, ts string, msgs ...anthropic.MessageParam) error {
	rows, err := e.eventRows(sid, eventID, ts, msgs)
	if err != nil {
		return err
	}
	return e.appendRows(ctx, sid, store.Answer{}, rows)
}

// eventRows encodes messages answering the chat event eventID ("" for
// none), whose message is ts, as the history's rows: the last user
// message carries ts (its last envelope), which recall names by ts.
func (e *Engine) eventRows(sid, eventID, ts string, msgs []anthropic.MessageParam) ([]store.Message, error) {
	rows, err := e.historyRows(sid, eventID, msgs)
	if err != nil {
		return nil, err
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Role == store.RoleUser {
			rows[i].TS = ts
			break
		}
	}
	return rows, nil
}

// persistAnswer appends the model's answer with what it records beside it
// (its cost, its event's answering mark), in one write.
func (e *Engine) persistAnswer(ctx context.Context, sid string, a store.Answer, answer anthropic.MessageParam) error {
	return e.appendHistory(ctx, sid, "", a, answer)
}

// postsReply reports whether the tool calls post in the thread (the reply
// tool: the event's answer).
func postsReply(uses []toolUse) bool {
	for _, u := range uses {
		if u.Name == tools.ChatReply {
			return true
		}
	}
	return false
}

// appendHistory stores msgs (answering the chat event eventID, "" for
// none) with what a records beside them, in one transaction.
func (e *Engine) appendHistory(ctx context.Context, sid, eventID string, a store.Answer, msgs ...anthropic.MessageParam) error {
	rows, err := e.historyRows(sid, eventID, msgs)
	if err != nil {
		return err
	}
	return e.appendRows(ctx, sid, a, rows)
}

// historyRows encodes msgs as the history's rows.
func (e *Engine) historyRows(sid, eventID string, msgs []anthropic.MessageParam) ([]store.Message, error) {
	rows := make([]store.Message, 0, len(msgs))
	now := e.o.Now()
	for _, m := range msgs {
		content, err := json.Marshal(m.Content)
		if err != nil {
			return nil, fmt.Errorf("encode message: %w", err)
		}
		rows = append(rows, store.Message{SessionID: sid, Role: string(m.Role), Content: content, CreatedAt: now, EventID: eventID})
	}
	return rows, nil
}

// appendRows stores rows with what a records beside them, in one
// transaction.
func (e *Engine) appendRows(ctx context.Context, sid string, a store.Answer, rows []store.Message) error {
	// The history must be written even when the turn is being cancelled,
	// so that what happened is not lost.
	ctx, span := e.o.Tracer.Start(context.WithoutCancel(ctx), "store.append_messages",
		trace.WithAttributes(attribute.Int("store.rows", len(rows))))
	defer span.End()
	if err := e.o.History.AppendAnswer(ctx, sid, a, rows...); err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}
