package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// Tool names (interfaces.md, "Schedules").
const (
	ToolAdd    = tools.ScheduleAdd
	ToolList   = tools.ScheduleList
	ToolRemove = tools.ScheduleRemove
)

// Tools are the agent_schedule tools over the book. Their calls act for
// the turn in their context (tools.TurnFromContext): its sender, its
// conversation; a member's turn is refused as the member's /schedule is.
// A refusal or a mistake in the request is an is_error result of one
// line; a failure of the runtime is the call's error.
func (b *Book) Tools() []tools.Tool {
	return []tools.Tool{
		{
			Name: ToolAdd,
			Description: "Schedule work: at each time `when` names, you get `prompt` as a message in this thread (target thread) " +
				"or as a new post at this channel's root (target channel). `when`: a 5-field cron expression (\"0 9 * * 1-5\"), " +
				"@hourly, @daily, @weekly, @every <duration of at least 1m>, in <duration> (once), or an RFC 3339 time (once). " +
				"Only the manager, the backup manager and approvers with scope schedule may; returns the schedule's id and next run.",
			Schema: json.RawMessage(`{"type":"object","properties":{` +
				`"when":{"type":"string","description":"When it runs: cron (minute hour day-of-month month day-of-week), @daily, @every 2h, in 30m, or 2026-11-30T09:00:00+01:00."},` +
				`"prompt":{"type":"string","description":"What to do at each run, as a message to you."},` +
				`"target":{"type":"string","enum":["thread","channel"],"description":"Where each run answers: this thread (default) or a new post at this channel's root."},` +
				`"tz":{"type":"string","description":"IANA time zone the time is read in (Europe/Berlin); default the requester's profile zone, else the service's."},` +
				`"name":{"type":"string","description":"A short label."}},` +
				`"required":["when","prompt"],"additionalProperties":false}`),
			Call: b.addTool,
		},
		{
			Name:        ToolList,
			Description: "List the schedules made in this conversation: id, when, target, next run and prompt.",
			Schema:      json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Call:        b.listTool,
		},
		{
			Name:        ToolRemove,
			Description: "Remove a schedule by its id (as add or list gave it).",
			Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The schedule's id."}},"required":["id"],"additionalProperties":false}`),
			Call:        b.removeTool,
		},
	}
}

// turn is the turn a call acts for, or the refusal to return.
func (b *Book) turn(ctx context.Context) (*pipeline.Turn, *tools.Result) {
	t, ok := tools.TurnFromContext(ctx)
	switch {
	case !ok || t.Event == nil || t.Event.ChannelID == "":
		r := tools.Errorf("no chat conversation to schedule in")
		return nil, &r
	case b == nil:
		r := tools.Errorf("%s", msgUnavailable)
		return nil, &r
	}
	return t, nil
}

// answer turns the book's answer into a result: a refusal or a mistake is
// its one line as an error result; a failure is the call's error.
func answer(text string, err error) (tools.Result, error) {
	var ue *pipeline.UserError
	switch {
	case errors.As(err, &ue):
		return tools.Errorf("%s", oneLine(ue.Message)), nil
	case err != nil:
		return tools.Result{}, err
	}
	return tools.Result{Text: text}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// decode reads a call's input into v, or says why not.
func decode(input json.RawMessage, v any) *tools.Result {
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	if err := json.Unmarshal(input, v); err != nil {
		r := tools.Errorf("%s", oneLine("invalid input: "+err.Error()))
		return &r
	}
	return nil
}

func (b *Book) addTool(ctx context.Context, input json.RawMessage) (tools.Result, error) {
	t, refused := b.turn(ctx)
	if refused != nil {
		return *refused, nil
	}
	var in struct {
		When   string `json:"when"`
		Prompt string `json:"prompt"`
		Target string `json:"target"`
		TZ     string `json:"tz"`
		Name   string `json:"name"`
	}
	if r := decode(input, &in); r != nil {
		return *r, nil
	}
	return answer(b.Add(ctx, t.Access, t.Event, Ask(in)))
}

func (b *Book) listTool(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
	t, refused := b.turn(ctx)
	if refused != nil {
		return *refused, nil
	}
	return answer(b.List(ctx, t.Access, t.Event))
}

func (b *Book) removeTool(ctx context.Context, input json.RawMessage) (tools.Result, error) {
	t, refused := b.turn(ctx)
	if refused != nil {
		return *refused, nil
	}
	var in struct {
		ID string `json:"id"`
	}
	if r := decode(input, &in); r != nil {
		return *r, nil
	}
	return answer(b.Remove(ctx, t.Access, t.Event, in.ID))
}
