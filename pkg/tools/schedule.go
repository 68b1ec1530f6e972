package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Names of the agent_schedule tools (interfaces.md, "Schedules").
const (
	ScheduleAdd    = "mcp__agent_schedule__add"
	ScheduleList   = "mcp__agent_schedule__list"
	ScheduleRemove = "mcp__agent_schedule__remove"
)

// ScheduleRequest is a schedule as the model or a person asks for it.
type ScheduleRequest struct {
	When   string
	Prompt string
	Target string // "thread" (default) or "channel"
	TZ     string // IANA name; "" is the creator's profile zone, else AGENT_TZ, else UTC
	Name   string
}

// ScheduleBook keeps the persona's schedules for the tools and the thread
// commands alike (internal/commands' Schedules): the same role rule, the
// same checks, the same texts. a is who asks, ev where. A refusal or a
// mistake in the request is a *pipeline.UserError whose Message is the
// one line to show; any other error is a failure of the runtime.
type ScheduleBook interface {
	Add(ctx context.Context, a pipeline.Access, ev *pipeline.Event, r ScheduleRequest) (string, error)
	List(ctx context.Context, a pipeline.Access, ev *pipeline.Event) (string, error)
	Remove(ctx context.Context, a pipeline.Access, ev *pipeline.Event, id string) (string, error)
}

// ScheduleServer is the agent_schedule tool server. Its calls act for the
// turn's sender, in the turn's conversation: a member's turn is refused
// as the member's /schedule is.
type ScheduleServer struct {
	Book ScheduleBook
}

// Tools returns the server's tools.
func (s *ScheduleServer) Tools() []Tool {
	return []Tool{
		{
			Name: ScheduleAdd,
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
			Call: s.add,
		},
		{
			Name:        ScheduleList,
			Description: "List the schedules made in this conversation: id, when, target, next run and prompt.",
			Schema:      json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Call:        s.list,
		},
		{
			Name:        ScheduleRemove,
			Description: "Remove a schedule by its id (as add or list gave it).",
			Schema:      json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The schedule's id."}},"required":["id"],"additionalProperties":false}`),
			Call:        s.remove,
		},
	}
}

// turn is the turn a call acts for, or the refusal to return.
func (s *ScheduleServer) turn(ctx context.Context) (*pipeline.Turn, *Result) {
	t, ok := TurnFromContext(ctx)
	switch {
	case !ok || t.Event == nil || t.Event.ChannelID == "":
		r := Errorf("no chat conversation to schedule in")
		return nil, &r
	case s.Book == nil:
		r := Errorf("schedules are not available here")
		return nil, &r
	}
	return t, nil
}

// answer turns the book's answer into a result: a refusal or a mistake is
// its one line as an error result; a failure is the call's error.
func answer(text string, err error) (Result, error) {
	var ue *pipeline.UserError
	switch {
	case errors.As(err, &ue):
		return Errorf("%s", oneLine(ue.Message)), nil
	case err != nil:
		return Result{}, err
	}
	return Result{Text: text}, nil
}

func (s *ScheduleServer) add(ctx context.Context, input json.RawMessage) (Result, error) {
	t, refused := s.turn(ctx)
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
	if err := decode(input, &in); err != nil {
		return Errorf("%s", oneLine(err.Error())), nil
	}
	return answer(s.Book.Add(ctx, t.Access, t.Event, ScheduleRequest(in)))
}

func (s *ScheduleServer) list(ctx context.Context, _ json.RawMessage) (Result, error) {
	t, refused := s.turn(ctx)
	if refused != nil {
		return *refused, nil
	}
	return answer(s.Book.List(ctx, t.Access, t.Event))
}

func (s *ScheduleServer) remove(ctx context.Context, input json.RawMessage) (Result, error) {
	t, refused := s.turn(ctx)
	if refused != nil {
		return *refused, nil
	}
	var in struct {
		ID string `json:"id"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%s", oneLine(err.Error())), nil
	}
	return answer(s.Book.Remove(ctx, t.Access, t.Event, in.ID))
}
