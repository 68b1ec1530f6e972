package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// toolUse is one tool call the model asked for.
type toolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// assistantMessage turns the model's answer into the message the history
// keeps. The model's plain text is logged, never posted.
func (e *Engine) assistantMessage(ctx context.Context, resp *anthropic.Message) (anthropic.MessageParam, []toolUse) {
	var blocks []anthropic.ContentBlockParamUnion
	var uses []toolUse
	for _, b := range resp.Content {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				continue
			}
			e.o.Log.DebugContext(ctx, "model text (not posted)", "chars", len(b.Text))
			blocks = append(blocks, anthropic.NewTextBlock(e.o.Redact(b.Text)))
		case "tool_use":
			input := b.Input
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(b.ID, redactJSON(input, e.o.Redact), b.Name))
			uses = append(uses, toolUse{ID: b.ID, Name: b.Name, Input: input})
		}
	}
	return anthropic.MessageParam{Role: anthropic.MessageParamRoleAssistant, Content: blocks}, uses
}

// runTools runs the calls in order and returns the user message answering
// every one of them, failures included. Each result is handed to save as
// a message of its own as soon as it is known; a save that fails ends
// the run.
func (e *Engine) runTools(ctx context.Context, t *pipeline.Turn, uses []toolUse, save func(anthropic.MessageParam) error) (anthropic.MessageParam, error) {
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(uses))
	tasksOf(ctx).batch(ctx, uses)
	for _, u := range uses {
		res := e.callTool(ctx, t, u)
		text := e.o.Redact(res.Text)
		if text == "" {
			text = "(no output)" // the API refuses empty text blocks
		}
		block := anthropic.NewToolResultBlock(u.ID, text, res.IsError)
		if err := save(anthropic.NewUserMessage(block)); err != nil {
			return anthropic.MessageParam{}, err
		}
		blocks = append(blocks, block)
	}
	return anthropic.NewUserMessage(blocks...), nil
}

// interruptedNote is the result of a tool call that a crash cut off.
const interruptedNote = "[runtime] This call was interrupted: the runtime restarted while it was running " +
	"(or waiting for approval; any card it waited on has expired). Its effect is unknown: " +
	"check what it did before running it again."

// interruptedResults returns the user message answering the tool calls of
// the last assistant message that have no result in the history (a crash
// came between the call and its result), or ok false when there are none.
func interruptedResults(msgs []anthropic.MessageParam) (anthropic.MessageParam, bool) {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == anthropic.MessageParamRoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return anthropic.MessageParam{}, false
	}
	answered := map[string]bool{}
	for _, m := range msgs[last+1:] {
		for _, b := range m.Content {
			if b.OfToolResult != nil {
				answered[b.OfToolResult.ToolUseID] = true
			}
		}
	}
	var blocks []anthropic.ContentBlockParamUnion
	for _, b := range msgs[last].Content {
		if b.OfToolUse != nil && !answered[b.OfToolUse.ID] {
			blocks = append(blocks, anthropic.NewToolResultBlock(b.OfToolUse.ID, interruptedNote, true))
		}
	}
	if len(blocks) == 0 {
		return anthropic.MessageParam{}, false
	}
	return anthropic.NewUserMessage(blocks...), true
}

// hasEventMessage reports whether the history holds the user message of
// the chat event id.
func hasEventMessage(rows []store.Message, id string) bool {
	if id == "" {
		return false
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].EventID == id {
			return true
		}
	}
	return false
}

func (e *Engine) callTool(ctx context.Context, t *pipeline.Turn, u toolUse) (res tools.Result) {
	began := time.Now()
	ctx, span := e.o.Tracer.Start(ctx, "tool."+u.Name, trace.WithAttributes(attribute.String("tool", u.Name)))
	outcome := "ok"
	defer func() {
		if v := recover(); v != nil {
			outcome = "error"
			e.o.Log.ErrorContext(ctx, "tool panicked", "tool", u.Name, "panic", fmt.Sprint(v))
			span.SetStatus(codes.Error, fmt.Sprint("panic: ", v))
			res = tools.Errorf("the tool %s failed", u.Name)
		}
		if res.IsError && outcome == "ok" {
			outcome = "refused"
		}
		span.SetAttributes(attribute.String("outcome", outcome))
		span.End()
		tasksOf(ctx).end(ctx, u.ID, res, outcome)
		if e.o.OnToolCall != nil {
			e.o.OnToolCall(u.Name, u.Input, res, outcome)
		}
		label := u.Name
		if outcome == "unknown" {
			label = "unknown" // the model's invented names must not make series
		}
		if e.o.Metrics.ToolCalls != nil {
			e.o.Metrics.ToolCalls.WithLabelValues(label, outcome).Inc()
		}
		if e.o.Metrics.ToolDuration != nil {
			e.o.Metrics.ToolDuration.WithLabelValues(label).Observe(time.Since(began).Seconds())
		}
	}()
	if ctx.Err() != nil {
		outcome = "aborted"
		return tools.Errorf("the turn was stopped before %s ran", u.Name)
	}
	if _, known := e.o.Tools.Get(u.Name); !known {
		outcome = "unknown"
		return tools.Errorf("unknown tool %q", u.Name)
	}
	if e.o.Gate != nil {
		ok, refusal, err := e.o.Gate.Check(ctx, t, u.Name, u.Input)
		if err != nil {
			if ctx.Err() != nil {
				outcome = "aborted"
				return tools.Errorf("the turn was stopped while %s waited for approval", u.Name)
			}
			outcome = "error"
			e.o.Log.ErrorContext(ctx, "tool gate failed", "tool", u.Name, "err", err)
			return tools.Errorf("%s could not be approved; the details are in the runtime's logs", u.Name)
		}
		if !ok {
			outcome = "refused"
			return refusal
		}
	}
	if tasks := tasksOf(ctx); tasks.shows() {
		tasks.begin(ctx, u.ID)
	} else if a := activity(u.Name); a != "" {
		e.status(ctx, t, a)
	}
	callCtx := ctx
	if streams, _ := ctx.Value(streamsKey{}).(*replyStreams); streams != nil && u.Name == tools.ChatReply {
		if s := streams.stream(u.ID); s != nil {
			// The reply was shown while written: its post finishes that
			// message instead of posting it again.
			st := *t
			st.Out = streamOutbox{Outbox: t.Out, stream: s}
			callCtx = tools.NewContextWithTurn(ctx, &st)
		}
	}
	res, err := e.o.Tools.Call(callCtx, u.Name, u.Input)
	if err != nil && ctx.Err() != nil {
		// Stopped while it ran (a card's wait, a command): the turn's
		// stop, not the tool's failure.
		outcome = "aborted"
		return tools.Errorf("the turn was stopped while %s ran", u.Name)
	}
	if err != nil {
		outcome = "error"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		e.o.Log.ErrorContext(ctx, "tool failed", "tool", u.Name, "err", err)
		return tools.Errorf("the tool %s failed; the details are in the runtime's logs", u.Name)
	}
	return res
}

// activity is the status shown while a tool runs: what the agent does,
// never the call's arguments (they could hold a secret); "" for the tools
// of the agent's voice, which show themselves (a reply, a card, a
// reaction).
func activity(tool string) string {
	switch tool {
	case tools.ChatThreadHistory:
		return "is reading the thread…"
	case tools.ChatChannelHistory:
		return "is reading the channel…"
	case tools.ChatGetUser:
		return "is looking someone up…"
	case tools.ChatChannelInfo, tools.ChatChannelMembers:
		return "is looking at the channel…"
	}
	switch tools.KindOf(tool) {
	case tools.KindChat:
		return ""
	case tools.KindRead:
		return "is reading…"
	case tools.KindEdit:
		return "is writing files…"
	case tools.KindPublish:
		return "is publishing skills…"
	}
	if tool == "Bash" {
		return "is running a command…"
	}
	return "is using " + tool + "…"
}

// status sets the assistant status indicator in DM threads (the assistant
// view); elsewhere the platform has no such indicator.
func (e *Engine) status(ctx context.Context, t *pipeline.Turn, text string) {
	if e.o.Status == nil || !t.Event.IsDM() {
		return
	}
	if s, ok := ctx.Value(stateKey{}).(*turnState); ok {
		s.mu.Lock()
		s.status = text != ""
		s.mu.Unlock()
	}
	if err := e.o.Status(ctx, t.Event.ChannelID, t.Event.RootTS(), text); err != nil {
		e.o.Log.DebugContext(ctx, "set assistant status", "err", err)
	}
}

// runningTurn is a turn in progress: how to stop it, and who started it
// (the person whose message it answers), who may stop it as well as the
// managers and approvers.
type runningTurn struct {
	cancel context.CancelFunc
	by     string
	ended  chan struct{} // closed once the turn has ended
	// over: the turn returned; its session's last update is still going
	// out (ended is not closed yet).
	over bool
}

// Ended returns a channel closed once the turn running in a thread has
// ended (its last word said, its session left active), or nil when none
// runs: what stopped it answers after it.
func (e *Engine) Ended(threadKey string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.running[threadKey]; ok {
		return r.ended
	}
	return nil
}

// Abort stops the turn running in a thread, at once; it reports whether one
// was running. The session stays usable: the history keeps what happened.
func (e *Engine) Abort(threadKey string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.running[threadKey]
	if ok {
		r.cancel()
	}
	return ok
}

// AbortOwn stops the turn running in a thread only when userID started it:
// the check and the stop hold the same lock, so a turn that someone else
// starts in the meantime is never the one stopped. running reports whether
// a turn runs in the thread at all, to tell a refusal from nothing to stop.
func (e *Engine) AbortOwn(threadKey, userID string) (stopped, running bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.running[threadKey]
	if !ok {
		return false, false
	}
	if userID == "" || r.by != userID {
		return false, true
	}
	r.cancel()
	return true, true
}

// AbortChannel stops every turn running in a channel (a slash command has
// no thread); it returns how many it stopped.
func (e *Engine) AbortChannel(channelID string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for key, r := range e.running {
		if strings.HasPrefix(key, channelID+":") {
			r.cancel()
			n++
		}
	}
	return n
}
