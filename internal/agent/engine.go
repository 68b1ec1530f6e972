package agent

import (
	"cmp"
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
	AddUsage(ctx context.Context, sessionID string, u store.Usage, spent *store.UsageRecord) error
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
// Spent is told each call's tokens and returns their row, which the
// engine stores with the call's answer (store.Answer.Spent), with the
// session's counters when the call brought no answer (recordUsage), or
// through Record when the answer's write failed.
type Budget interface {
	Admit(ctx context.Context, t *pipeline.Turn, show func()) (bool, error)
	Spent(t *pipeline.Turn, model string, u store.Usage) store.UsageRecord
	Record(ctx context.Context, r store.UsageRecord)
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
	tools []anthropic.ToolUnionParam

	mu      sync.Mutex
	running map[string]runningTurn // thread key → its running turn

	bg sync.WaitGroup // work a turn left running beside it (the token counters)

	static atomic.Pointer[encodedBlock] // the last static system block (staticBlock)

	// waits, when set (by tests: export_test.go), is told each time a
	// turn starts to wait: for a slot, for its first status call, for a
	// tool result written behind it. A test learns that a turn is blocked
	// from it rather than by sleeping.
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

// Wait waits for the work turns left running beside them: call it after
// the last turn ended and before the store closes.
func (e *Engine) Wait() { e.bg.Wait() }

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
	e := &Engine{o: o, slots: make(chan struct{}, o.MaxTurns), running: map[string]runningTurn{}}
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
// model and runs the tools it asks for until the model ends its turn.
func (e *Engine) Turn(ctx context.Context, t *pipeline.Turn) (err error) {
	// The turn's place among the MaxTurns: the code that waits for a
	// person gives it back meanwhile (pipeline.Slot).
	slot := &turnSlot{slots: e.slots, waiting: func() { e.waiting(waitSlot) }}
	if err := slot.Acquire(ctx); err != nil {
		return err
	}
	defer slot.Release()
	ctx = pipeline.NewContextWithSlot(ctx, slot)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := t.Event.ThreadKey()
	e.mu.Lock()
	ended := make(chan struct{})
	e.running[key] = runningTurn{cancel: cancel, by: t.Event.UserID, ended: ended}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.running, key)
		e.mu.Unlock()
		close(ended)
	}()

	began := e.o.Now()
	ctx, span := e.o.Tracer.Start(ctx, "agent.turn", trace.WithAttributes(attribute.String("session_id", t.Session.ID())))
	outcome := "ok"
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			if outcome == "ok" {
				outcome = "error"
			}
		}
		span.SetAttributes(attribute.String("outcome", outcome))
		span.End()
		if e.o.Metrics.Turns != nil {
			e.o.Metrics.Turns.WithLabelValues(outcome).Inc()
		}
		if e.o.Metrics.TurnDuration != nil {
			e.o.Metrics.TurnDuration.Observe(e.o.Now().Sub(began).Seconds())
		}
	}()

	// A session created for this message has nothing stored yet.
	created := false
	if s, ok := t.Session.(interface{ TakeEmpty() bool }); ok {
		created = s.TakeEmpty()
	}
	// The session's first status goes out while the history loads and
	// the model is asked; nothing the turn shows goes before it is over
	// (loop). Whatever happens next, the session is left active.
	state := &turnState{}
	ctx = context.WithValue(ctx, stateKey{}, state)
	state.view = e.startView(ctx, t, created)
	ctx = pipeline.NewContextWithSuspender(ctx, state.view)
	thinking := state.view.shown
	defer state.view.finish(ctx)

	sid := t.Session.ID()
	var stored []store.Message
	if !created {
		if stored, err = e.o.History.History(ctx, sid); err != nil {
			return fmt.Errorf("load history: %w", err)
		}
	}
	msgs, err := requestHistory(stored)
	if err != nil {
		return fmt.Errorf("session %s: %w", sid, err)
	}
	// A crash between a tool call and its result leaves the call
	// unanswered: the model is told its effect is unknown, so that it
	// checks before repeating it.
	if fix, ok := interruptedResults(msgs); ok {
		if err := e.persist(ctx, sid, fix); err != nil {
			return err
		}
		msgs = append(msgs, fix)
	}
	// A resumed event whose message was stored before the crash goes on
	// from the history as it is.
	if t.Event.Resumed && hasEventMessage(stored, t.Event.ID) {
		e.markSeen(ctx, t)
		return e.loop(ctx, t, sid, msgs, &outcome, thinking)
	}
	// A message's files are saved only for a turn the budgets admit: a
	// refused turn stores the message with its files named as not saved,
	// and writes nothing to disk (a thread past its budget cannot fill
	// it). The loop does not ask again before its first call.
	admitted := true
	var attached tools.Attached
	if len(t.Event.Files) > 0 && e.o.Attach != nil {
		if admitted, err = e.admit(ctx, t, thinking, &outcome); err != nil {
			return err
		}
		state.admitted = admitted
	}
	if admitted {
		attached = e.attachments(ctx, t)
	} else {
		attached = tools.NotSaved(t, msgFilesRefused)
	}
	input := e.turnInput(ctx, t, e.userMessage(t, attached))
	if len(stored) == 0 {
		input = e.withMemories(ctx, t, input)
	}
	if err := e.persistEvent(ctx, sid, t.Event.ID, input...); err != nil {
		return err
	}
	e.markSeen(ctx, t)
	if !admitted {
		return nil
	}
	msgs = append(msgs, input...)
	return e.loop(ctx, t, sid, msgs, &outcome, thinking)
}

// msgFilesRefused is why the files of a message whose turn a budget
// refused are not saved, as the turn's input names them.
const msgFilesRefused = "a budget stopped this turn before it ran; ask for the file again once the budget allows"

// admit asks the budgets whether the turn may call the model
// (Budget.Admit); outcome is set when it may not.
func (e *Engine) admit(ctx context.Context, t *pipeline.Turn, thinking func(), outcome *string) (bool, error) {
	if e.o.Budget == nil {
		return true, nil
	}
	ok, err := e.o.Budget.Admit(ctx, t, thinking)
	switch {
	case err != nil && ctx.Err() != nil:
		*outcome = "aborted"
		return false, err
	case err != nil:
		return false, err
	case !ok:
		*outcome = "budget"
		return false, nil
	}
	return true, nil
}

// loop calls the model and runs the tools it asks for until the model
// ends its turn.
// thinking waits for the turn's first status call.
func (e *Engine) loop(ctx context.Context, t *pipeline.Turn, sid string, msgs []anthropic.MessageParam, outcomeP *string,
	thinking func()) (err error) {
	outcome := *outcomeP
	defer func() { *outcomeP = outcome }()
	state, _ := ctx.Value(stateKey{}).(*turnState)
	ctx = tools.NewContextWithTurn(ctx, t)
	// The first status call runs beside the model's; everything the turn
	// shows or does in the thread waits for it (a status landing after a
	// reply would stay up): a streamed reply before it shows its first
	// words, the rest once the model has answered.
	defer func() {
		// A status shown since the last reply is cleared; one a reply
		// followed, the platform has cleared already.
		state.mu.Lock()
		shown := state.status
		state.mu.Unlock()
		if shown {
			e.status(context.WithoutCancel(ctx), t, "")
		}
	}()
	var promptTokens int64
	defer func() {
		if err == nil && promptTokens > e.o.CompactAt {
			if _, cerr := e.compact(context.WithoutCancel(ctx), sid, t, false); cerr != nil {
				e.o.Log.WarnContext(ctx, "compaction after a large turn", "session_id", sid, "err", cerr)
			}
		}
	}()
	// The turn has answered before the history is compacted: the session
	// shows it (and drops its stop button) at once.
	defer state.view.finish(ctx)
	// A tool's result is written behind the turn: while the next tool
	// runs or the model is asked again. The turn's next write waits for
	// it, and so does its end: this defer runs before the others (the
	// compaction reads the history).
	var behind <-chan error
	caughtUp := func() error {
		if behind == nil {
			return nil
		}
		var err error
		select {
		case err = <-behind:
		default:
			e.waiting(waitWrite)
			err = <-behind
		}
		behind = nil
		return err
	}
	defer func() {
		switch werr := caughtUp(); {
		case werr == nil:
		case err == nil:
			err = werr
		default: // the turn failed anyway: the write's error is not lost
			e.o.Log.ErrorContext(ctx, "tool result not stored", "session_id", sid, "err", werr)
		}
	}()
	static, thread := e.o.Prompt(t)
	ctx = e.withTurnModel(ctx, t)
	// The messages as stored; the requests carry the files their labels
	// name (attachments.go).
	stored := msgs
	msgs, shown := e.showAttachments(ctx, t, msgs, "")
	guarded := false
	for step := 0; ; step++ {
		if step >= e.o.MaxSteps {
			outcome = "max_steps"
			thinking()
			_, err := t.Out.Post(ctx, fmt.Sprintf(msgMaxSteps, e.o.MaxSteps))
			return err
		}
		// A tool that waited for a person took the turn's place again
		// before it returned; this makes sure of it whatever the tool did:
		// the model is asked only by a turn that holds a place.
		if err := pipeline.SlotFromContext(ctx).Acquire(ctx); err != nil {
			outcome = "aborted"
			return err
		}
		// Checked before every call (the first one was before the
		// message's files were saved, when it had any): a turn that
		// crossed a budget's line has finished the reply it was writing
		// and stops here.
		if step > 0 || !state.admitted {
			if ok, err := e.admit(ctx, t, thinking, &outcome); !ok {
				return err
			}
		}
		streams := e.replyStreams(ctx, t, thinking)
		sendCtx, toolCtx := ctx, ctx
		if streams != nil {
			sendCtx = llm.WithToolInputObserver(ctx, streams)
			toolCtx = context.WithValue(ctx, streamsKey{}, streams)
		}
		resp, err := e.send(sendCtx, static, thread, msgs)
		if why, refused := refusedReason(err); refused && shown > 0 && ctx.Err() == nil {
			e.o.Log.WarnContext(ctx, "the model refused a request carrying attachments; asking again without them",
				"session_id", sid, "attachments", shown, "err", err)
			var hidden []anthropic.MessageParam
			hidden, shown = e.showAttachments(ctx, t, stored, why)
			msgs = append(hidden, msgs[len(stored):]...)
			resp, err = e.send(sendCtx, static, thread, msgs)
		}
		thinking()
		if err != nil {
			if streams != nil {
				streams.stopAll(context.WithoutCancel(ctx))
			}
			if ctx.Err() != nil {
				outcome = "aborted"
				return ctx.Err()
			}
			return e.modelError(err, &outcome)
		}
		usage := storeUsage(resp.Usage)
		var spent *store.UsageRecord // stored with the answer, in its write
		if e.o.Budget != nil {
			r := e.o.Budget.Spent(t, cmp.Or(string(resp.Model), e.o.Model.Model()), usage)
			spent = &r
		}
		promptTokens = resp.Usage.InputTokens + resp.Usage.CacheReadInputTokens + resp.Usage.CacheCreationInputTokens
		assistant, uses := e.assistantMessage(ctx, resp)
		if err := caughtUp(); err != nil {
			return err
		}
		if len(uses) == 0 {
			if len(assistant.Content) > 0 {
				if err := e.persistAnswer(ctx, sid, store.Answer{Usage: usage, Spent: spent}, assistant); err != nil {
					e.recordSpent(ctx, spent)
					return err
				}
				msgs = append(msgs, assistant)
			} else {
				e.recordUsage(ctx, sid, usage, spent)
			}
			if resp.StopReason == anthropic.StopReasonPauseTurn && len(assistant.Content) > 0 {
				continue
			}
			if state.replied() == 0 && !guarded {
				guarded = true
				if e.o.Metrics.StopGuard != nil {
					e.o.Metrics.StopGuard.Inc()
				}
				e.o.Log.InfoContext(ctx, "turn ended without a reply; sending the model back once", "session_id", sid)
				reminder := anthropic.NewUserMessage(anthropic.NewTextBlock(stopGuardText))
				if err := e.persist(ctx, sid, reminder); err != nil {
					return err
				}
				msgs = append(msgs, reminder)
				continue
			}
			if state.replied() == 0 {
				outcome = "no_reply"
				e.o.Log.WarnContext(ctx, "turn ended without a reply after the reminder", "session_id", sid)
			}
			return nil
		}
		// The tool calls are stored before they run and each result as it
		// comes, so that a crash loses no result and leaves the unfinished
		// calls for interruptedResults. A call that posts the event's first
		// answer marks the event answering in the same write.
		answer := store.Answer{Usage: usage, Spent: spent}
		progress := pipeline.ProgressFromContext(ctx)
		if t.Event.ID != "" && progress != nil && !progress.IsAnswering() && postsReply(uses) {
			answer.Answering = t.Event.ID
		}
		if err := e.persistAnswer(ctx, sid, answer, assistant); err != nil {
			e.recordSpent(ctx, spent)
			return err
		}
		if answer.Answering != "" {
			progress.AnsweringRecorded()
		}
		results, err := e.runTools(toolCtx, t, uses, func(result anthropic.MessageParam) error {
			if err := caughtUp(); err != nil {
				return err
			}
			behind = e.writeBehind(ctx, sid, result)
			return nil
		})
		if streams != nil {
			streams.stopAll(context.WithoutCancel(ctx))
		}
		if err != nil {
			return err
		}
		msgs = append(msgs, assistant, results)
		if err := ctx.Err(); err != nil {
			outcome = "aborted"
			return err
		}
	}
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
		Tools:     e.tools,
		Messages:  mergeRoles(msgs),
	})
}

func storeUsage(u anthropic.Usage) store.Usage {
	return store.Usage{Input: u.InputTokens, Output: u.OutputTokens,
		CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
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

// recordUsage adds the tokens of a response that left nothing to store to
// the session's counters, with the call's row of model_usage (spent, if
// any), off the turn's path: the response ended the turn, so no budget
// check of this turn waits for them, and the next turns' checks find them
// written as surely as those of turns running beside this one would. A
// crash losing the last response's count costs nothing else. (A response
// with content is stored with its usage, persistAnswer.)
func (e *Engine) recordUsage(ctx context.Context, sid string, u store.Usage, spent *store.UsageRecord) {
	ctx = context.WithoutCancel(ctx)
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		err := e.o.History.AddUsage(ctx, sid, u, spent)
		if err != nil {
			e.o.Log.WarnContext(ctx, "record token usage", "session_id", sid, "err", err)
		}
	}()
}

// recordSpent stores a model call's tokens (Budget.Spent) that its
// answer's write failed to take: the spend counts even when the turn does
// not go on.
func (e *Engine) recordSpent(ctx context.Context, r *store.UsageRecord) {
	if r != nil && e.o.Budget != nil {
		e.o.Budget.Record(context.WithoutCancel(ctx), *r)
	}
}

// writeBehind appends msg to the session's history in the background; the
// channel gets the write's outcome. The write starts at once, so a result
// is as durable as when the turn waited for it.
// The message is encoded before it returns: the request that follows
// marks its last block (the cache breakpoint) in place.
func (e *Engine) writeBehind(ctx context.Context, sid string, msg anthropic.MessageParam) <-chan error {
	done := make(chan error, 1)
	rows, err := e.historyRows(sid, "", []anthropic.MessageParam{msg})
	if err != nil {
		done <- err
		return done
	}
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		done <- e.appendRows(ctx, sid, store.Answer{}, rows)
	}()
	return done
}

// persist appends messages to the session's history.
func (e *Engine) persist(ctx context.Context, sid string, msgs ...anthropic.MessageParam) error {
	return e.persistEvent(ctx, sid, "", msgs...)
}

// persistEvent appends messages answering the chat event eventID ("" for
// none) to the session's history.
func (e *Engine) persistEvent(ctx context.Context, sid, eventID string, msgs ...anthropic.MessageParam) error {
	return e.appendHistory(ctx, sid, eventID, store.Answer{}, msgs...)
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
