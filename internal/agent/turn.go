package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// A turn, in the order Engine.Turn runs it:
//
//	register  the thread's running turn (Abort, Ended) and its span
//	prepare   the history loaded, the person's message (input) written
//	          beside the first model call (behind)
//	loop      model call, its answer stored with its cost, the tools it
//	          asks for, again (step), until the model ends the turn
//	wrapUp    the write behind the turn caught up, the session
//	          shown active, a large history compacted, a status cleared
//	end       the span and the turn's metrics
//
// turn is what these phases share.
type turn struct {
	e     *Engine
	t     *pipeline.Turn
	sid   string
	state *turnState
	// outcome is the turn's agent_turns_total label ("ok" unless a phase
	// says otherwise).
	outcome string
	began   time.Time
	span    trace.Span

	// What the requests carry (loop): the prompt's two parts and the
	// messages, with the files their labels name shown (attachments.go);
	// stored are the messages the loop started from, as stored, and shown
	// how many files the requests show.
	static, thread string
	msgs, stored   []anthropic.MessageParam
	shown          int
	// guarded is set once the model was sent back for ending without a
	// reply (stopGuardText).
	guarded bool
	// promptTokens is the last request's prompt size: past CompactAt, the
	// history is compacted once the turn has answered.
	promptTokens int64
	// behind is the write of the person's message or of the last tool
	// result, running behind the turn (writeBehind); nil when none runs.
	behind <-chan error
}

// thinking waits for the turn's first status call: nothing the turn shows
// in the thread goes before it.
func (r *turn) thinking() { r.state.view.shown() }

// register makes the turn the thread's running one (Abort stops it,
// Ended tells when it is over) and opens its span; the function returned
// undoes the registration once the turn's session has settled (its last
// update, sent beside the turn's end, is done): a turn is over for Ended
// when its session is left active. after is the thread's previous turn's
// end, when it returned but has not settled yet: the session's updates
// keep their order.
func (e *Engine) register(ctx context.Context, t *pipeline.Turn) (_ context.Context, r *turn, after <-chan struct{}, unregister func()) {
	ctx, cancel := context.WithCancel(ctx)
	key := t.Event.ThreadKey()
	ended := make(chan struct{})
	e.mu.Lock()
	if prev, ok := e.running[key]; ok && prev.over {
		after = prev.ended
	}
	e.running[key] = runningTurn{cancel: cancel, by: t.Event.UserID, ended: ended}
	e.mu.Unlock()
	r = &turn{e: e, t: t, sid: t.Session.ID(), outcome: "ok", began: e.o.Now()}
	unregister = func() {
		cancel()
		e.mu.Lock()
		if cur, ok := e.running[key]; ok && cur.ended == ended {
			cur.over = true
			e.running[key] = cur
		}
		e.mu.Unlock()
		over := func() {
			e.mu.Lock()
			if cur := e.running[key]; cur.ended == ended { // not a later turn of the thread
				delete(e.running, key)
			}
			e.mu.Unlock()
			close(ended)
		}
		if settled := r.settled(); settled != nil {
			e.beside(func() { <-settled; over() })
			return
		}
		over()
	}
	ctx, r.span = e.o.Tracer.Start(ctx, "agent.turn", trace.WithAttributes(attribute.String("session_id", r.sid)))
	return ctx, r, after, unregister
}

// settled is closed once the turn's session has had its last update; nil
// when there is nothing to wait for (the turn never showed itself, or it
// settled already).
func (r *turn) settled() <-chan struct{} {
	if r.state == nil || r.state.view == nil {
		return nil
	}
	select {
	case <-r.state.view.settled:
		return nil
	default:
		return r.state.view.settled
	}
}

// end closes the turn's span and counts it.
func (r *turn) end(err error) {
	if err != nil {
		r.span.RecordError(err)
		r.span.SetStatus(codes.Error, err.Error())
		if r.outcome == "ok" {
			r.outcome = "error"
		}
	}
	r.span.SetAttributes(attribute.String("outcome", r.outcome))
	r.span.End()
	m := r.e.o.Metrics
	if m.Turns != nil {
		m.Turns.WithLabelValues(r.outcome).Inc()
	}
	if m.TurnDuration != nil {
		m.TurnDuration.Observe(r.e.o.Now().Sub(r.began).Seconds())
	}
}

// prepare loads the session's history and stores the person's message
// (with its files, when the budgets admit the turn, and the memories of a
// thread's first turn). It returns the messages the first request
// carries, or run false when the turn stops there (a budget refused it).
// The session's first status goes out meanwhile (startView).
func (r *turn) prepare(ctx context.Context, after <-chan struct{}) (_ context.Context, msgs []anthropic.MessageParam, run bool, err error) {
	e, t := r.e, r.t
	// A session created for this message has nothing stored yet.
	created := false
	if s, ok := t.Session.(interface{ TakeEmpty() bool }); ok {
		created = s.TakeEmpty()
	}
	r.state = &turnState{}
	ctx = context.WithValue(ctx, stateKey{}, r.state)
	r.state.view = e.startView(ctx, t, created, after)
	r.state.tasks = e.newTaskView(t)
	r.state.view.tasks = r.state.tasks
	ctx = pipeline.NewContextWithSuspender(ctx, r.state.view)

	var stored []store.Message
	if !created {
		if stored, err = e.o.History.History(ctx, r.sid); err != nil {
			return ctx, nil, false, fmt.Errorf("load history: %w", err)
		}
	}
	if msgs, err = requestHistory(stored); err != nil {
		return ctx, nil, false, fmt.Errorf("session %s: %w", r.sid, err)
	}
	// A crash between a tool call and its result leaves the call
	// unanswered: the model is told its effect is unknown, so that it
	// checks before repeating it.
	if fix, ok := interruptedResults(msgs); ok {
		if err := e.persist(ctx, r.sid, fix); err != nil {
			return ctx, nil, false, err
		}
		msgs = append(msgs, fix)
	}
	// A resumed event whose message was stored before the crash goes on
	// from the history as it is.
	if t.Event.Resumed && hasEventMessage(stored, t.Event.ID) {
		e.markSeen(ctx, t)
		return ctx, msgs, true, nil
	}
	input, admitted, err := r.input(ctx, len(stored) == 0)
	if err != nil {
		return ctx, nil, false, err
	}
	// The message is stored beside the first model call (the call does
	// not read it back): the answer's write waits for it (caughtUp), so
	// the history keeps its order, and a turn whose message could not be
	// stored ends with that error, its model call counted. The thread's
	// unseen mark is cleared once the message is stored.
	rows, err := e.eventRows(r.sid, t.Event.ID, t.Event.TS, input)
	if err != nil {
		return ctx, nil, false, err
	}
	r.behind = e.writeBehind(ctx, r.sid, rows, func() { e.markSeen(ctx, t) })
	if !admitted {
		// The turn stops here: it ends once its message is stored.
		return ctx, append(msgs, input...), false, r.caughtUp()
	}
	return ctx, append(msgs, input...), true, nil
}

// input is the person's message as the history stores it: their words,
// the thread's unseen messages before them, the memories of a thread's
// first turn (first), and their files. A message's files are saved only
// for a turn the budgets admit: a refused turn stores the message with
// its files named as not saved, and writes nothing to disk (a thread past
// its budget cannot fill it). The loop does not ask again before its
// first call.
func (r *turn) input(ctx context.Context, first bool) (input []anthropic.MessageParam, admitted bool, err error) {
	e, t := r.e, r.t
	admitted = true
	if len(t.Event.Files) > 0 && e.o.Attach != nil {
		if admitted, err = r.admit(ctx); err != nil {
			return nil, false, err
		}
		r.state.admitted = admitted
	}
	var attached tools.Attached
	if admitted {
		attached = e.attachments(ctx, t)
	} else {
		attached = tools.NotSaved(t, msgFilesRefused)
	}
	input = e.turnInput(ctx, t, e.userMessage(t, attached))
	if first {
		input = e.withMemories(ctx, t, input)
	}
	return input, admitted, nil
}

// msgFilesRefused is why the files of a message whose turn a budget
// refused are not saved, as the turn's input names them.
const msgFilesRefused = "a budget stopped this turn before it ran; ask for the file again once the budget allows"

// admit asks the budgets whether the turn may call the model
// (Budget.Admit); the outcome is set when it may not.
func (r *turn) admit(ctx context.Context) (bool, error) {
	if r.e.o.Budget == nil {
		return true, nil
	}
	ok, err := r.e.o.Budget.Admit(ctx, r.t, r.thinking)
	switch {
	case err != nil && ctx.Err() != nil:
		r.outcome = "aborted"
		return false, err
	case err != nil:
		return false, err
	case !ok:
		r.outcome = "budget"
		return false, nil
	}
	return true, nil
}

// run is the loop and its wrap-up, which happens however the loop ended.
func (r *turn) run(ctx context.Context, msgs []anthropic.MessageParam) (err error) {
	ctx = tools.NewContextWithTurn(ctx, r.t)
	defer func() { err = r.wrapUp(ctx, err) }()
	return r.loop(ctx, msgs)
}

// loop calls the model and runs the tools it asks for until the model
// ends its turn, a budget stops it, or it has taken MaxSteps calls.
func (r *turn) loop(ctx context.Context, msgs []anthropic.MessageParam) error {
	r.static, r.thread = r.e.o.Prompt(r.t)
	ctx = r.e.withTurnModel(ctx, r.t)
	// The messages as stored; the requests carry the files their labels
	// name (attachments.go).
	r.stored = msgs
	r.msgs, r.shown = r.e.showAttachments(ctx, r.t, msgs, "")
	for n := 0; ; n++ {
		if n >= r.e.o.MaxSteps {
			r.outcome = "max_steps"
			r.thinking()
			_, err := r.t.Out.Post(ctx, fmt.Sprintf(msgMaxSteps, r.e.o.MaxSteps))
			return err
		}
		if done, err := r.step(ctx, n); done || err != nil {
			return err
		}
	}
}

// step is the turn's model call n and what follows from its answer: done
// when the turn is over.
func (r *turn) step(ctx context.Context, n int) (done bool, err error) {
	if ok, err := r.mayCall(ctx, n); !ok {
		return true, err
	}
	// The first status call runs beside the model's; everything the turn
	// shows or does in the thread waits for it (a status landing after a
	// reply would stay up): a streamed reply before it shows its first
	// words, the rest once the model has answered.
	streams := r.e.replyStreams(ctx, r.t, r.thinking)
	resp, err := r.call(ctx, streams)
	r.thinking()
	if err != nil {
		if streams != nil {
			streams.stopAll(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			r.outcome = "aborted"
			return true, ctx.Err()
		}
		return true, r.e.modelError(err, &r.outcome)
	}
	spent := r.e.spent(r.t, resp)
	r.promptTokens = resp.Usage.InputTokens + resp.Usage.CacheReadInputTokens + resp.Usage.CacheCreationInputTokens
	assistant, uses := r.e.assistantMessage(ctx, resp)
	if err := r.caughtUp(); err != nil {
		r.e.recordUsage(ctx, spent)
		return true, err
	}
	if len(uses) == 0 {
		return r.answered(ctx, resp, assistant, spent)
	}
	return false, r.useTools(ctx, streams, assistant, uses, spent)
}

// mayCall reports whether the turn may make its model call n: it holds
// a place among the MaxTurns again (a tool that waited for a person gave
// it back; this makes sure of it whatever the tool did), and the budgets
// admit it — asked before every call (the first one was asked before
// the message's files were saved, when it had any): a turn that crossed
// a budget's line has finished the reply it was writing and stops here.
func (r *turn) mayCall(ctx context.Context, n int) (bool, error) {
	if err := pipeline.SlotFromContext(ctx).Acquire(ctx); err != nil {
		r.outcome = "aborted"
		return false, err
	}
	if n > 0 || !r.state.admitted {
		return r.admit(ctx)
	}
	return true, nil
}

// call sends the turn's request; a request carrying attachments that the
// model refuses is sent again without them (named instead).
func (r *turn) call(ctx context.Context, streams *replyStreams) (*anthropic.Message, error) {
	sendCtx := ctx
	if streams != nil {
		sendCtx = llm.WithToolInputObserver(ctx, streams)
	}
	resp, err := r.e.send(sendCtx, r.static, r.thread, r.msgs)
	if why, refused := refusedReason(err); refused && r.shown > 0 && ctx.Err() == nil {
		r.e.o.Log.WarnContext(ctx, "the model refused a request carrying attachments; asking again without them",
			"session_id", r.sid, "attachments", r.shown, "err", err)
		var hidden []anthropic.MessageParam
		hidden, r.shown = r.e.showAttachments(ctx, r.t, r.stored, why)
		r.msgs = append(hidden, r.msgs[len(r.stored):]...)
		resp, err = r.e.send(sendCtx, r.static, r.thread, r.msgs)
	}
	return resp, err
}

// keep stores the model's answer with its cost (spent, the call's row of
// model_usage), in one write; an answer with nothing to store leaves its
// cost to a write of its own beside the turn (no budget check of this
// turn waits for it: the next turns' checks find it written as surely as
// those of turns running beside this one would; a crash losing it costs
// nothing else). The cost of an answer whose write failed is still
// recorded. kept reports whether the answer went into the history.
func (r *turn) keep(ctx context.Context, a store.Answer, assistant anthropic.MessageParam) (kept bool, err error) {
	if len(assistant.Content) == 0 {
		r.e.beside(func() { r.e.recordUsage(ctx, a.Spent) })
		return false, nil
	}
	if err := r.e.persistAnswer(ctx, r.sid, a, assistant); err != nil {
		r.e.recordUsage(ctx, a.Spent)
		return false, err
	}
	return true, nil
}

// answered handles an answer without tool calls: the model paused (it
// goes on), ended without having replied (sent back once), or ended.
func (r *turn) answered(ctx context.Context, resp *anthropic.Message, assistant anthropic.MessageParam, spent *store.UsageRecord) (done bool, err error) {
	kept, err := r.keep(ctx, store.Answer{Spent: spent}, assistant)
	if err != nil {
		return true, err
	}
	if kept {
		r.msgs = append(r.msgs, assistant)
	}
	if resp.StopReason == anthropic.StopReasonPauseTurn && kept {
		return false, nil
	}
	if r.state.replied() > 0 {
		return true, nil
	}
	// Silence is an answer to a peer (interfaces.md): a peer-admitted
	// turn that ends without a reply posts nothing and is not sent back.
	if r.t.Access.Role == pipeline.RolePeer {
		r.outcome = "silent"
		return true, nil
	}
	if !r.guarded {
		r.guarded = true
		if r.e.o.Metrics.StopGuard != nil {
			r.e.o.Metrics.StopGuard.Inc()
		}
		r.e.o.Log.InfoContext(ctx, "turn ended without a reply; sending the model back once", "session_id", r.sid)
		reminder := anthropic.NewUserMessage(anthropic.NewTextBlock(stopGuardText))
		if err := r.e.persist(ctx, r.sid, reminder); err != nil {
			return true, err
		}
		r.msgs = append(r.msgs, reminder)
		return false, nil
	}
	r.outcome = "no_reply"
	r.e.o.Log.WarnContext(ctx, "turn ended without a reply after the reminder", "session_id", r.sid)
	return true, nil
}

// useTools stores the model's tool calls and runs them. The calls are
// stored before they run and each result as it comes (written behind the
// turn: while the next tool runs or the model is asked again), so that a
// crash loses no result and leaves the unfinished calls for
// interruptedResults. A call that posts the event's first answer marks
// the event answering in the same write as the calls.
func (r *turn) useTools(ctx context.Context, streams *replyStreams, assistant anthropic.MessageParam, uses []toolUse, spent *store.UsageRecord) error {
	answer := store.Answer{Spent: spent}
	progress := pipeline.ProgressFromContext(ctx)
	if r.t.Event.ID != "" && progress != nil && !progress.IsAnswering() && postsReply(uses) {
		answer.Answering = r.t.Event.ID
	}
	if _, err := r.keep(ctx, answer, assistant); err != nil {
		return err
	}
	if answer.Answering != "" {
		progress.AnsweringRecorded()
	}
	toolCtx := ctx
	if streams != nil {
		toolCtx = context.WithValue(ctx, streamsKey{}, streams)
	}
	results, err := r.e.runTools(toolCtx, r.t, uses, func(result anthropic.MessageParam) error {
		if err := r.caughtUp(); err != nil {
			return err
		}
		rows, err := r.e.historyRows(r.sid, "", []anthropic.MessageParam{result})
		if err != nil {
			return err
		}
		r.behind = r.e.writeBehind(ctx, r.sid, rows, nil)
		return nil
	})
	if streams != nil {
		streams.stopAll(context.WithoutCancel(ctx))
	}
	if err != nil {
		return err
	}
	r.msgs = append(r.msgs, assistant, results)
	if err := ctx.Err(); err != nil {
		r.outcome = "aborted"
		return err
	}
	return nil
}

// caughtUp waits for the message or tool result written behind the
// turn, if any: the turn's next write waits for it, and so does its end.
func (r *turn) caughtUp() error {
	if r.behind == nil {
		return nil
	}
	var err error
	select {
	case err = <-r.behind:
	default:
		r.e.waiting(waitWrite)
		err = <-r.behind
	}
	r.behind = nil
	return err
}

// wrapUp ends the loop, whatever ended it (err), in this order: the
// write behind the turn is waited for (its error is the turn's unless the
// turn failed anyway); the session shows the turn answered (and drops its
// stop button) at once; then, past CompactAt, the history is compacted
// (it reads the history: after the write); then a status shown since the
// last reply is cleared (one a reply followed, the platform has cleared
// already).
func (r *turn) wrapUp(ctx context.Context, err error) error {
	switch werr := r.caughtUp(); {
	case werr == nil:
	case err == nil:
		err = werr
	default: // the turn failed anyway: the write's error is not lost
		r.e.o.Log.ErrorContext(ctx, "a message written behind the turn was not stored", "session_id", r.sid, "err", werr)
	}
	r.state.tasks.finish(context.WithoutCancel(ctx))
	r.state.view.finish(ctx)
	if err == nil && r.promptTokens > r.e.o.CompactAt {
		if _, cerr := r.e.compact(context.WithoutCancel(ctx), r.sid, r.t, false); cerr != nil {
			r.e.o.Log.WarnContext(ctx, "compaction after a large turn", "session_id", r.sid, "err", cerr)
		}
	}
	r.state.mu.Lock()
	shown := r.state.status
	r.state.mu.Unlock()
	if shown {
		r.e.status(context.WithoutCancel(ctx), r.t, "")
	}
	return err
}
