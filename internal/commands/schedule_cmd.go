package commands

import (
	"context"
	"errors"
	"strings"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// schedule runs /schedule, /schedules and /unschedule (and their aliases)
// through the book the agent_schedule tools use: one rule of who may, one
// set of checks and texts.
func (c *Commands) schedule(ctx context.Context, ev *pipeline.Event, a pipeline.Access, name, key, args string, out pipeline.Outbox) error {
	if c.Schedules == nil {
		return say(ctx, out, "Schedules are not available here.")
	}
	var text string
	var err error
	switch name {
	case "/schedule":
		text, err = c.addSchedule(ctx, ev, a, args)
	case "/schedules":
		text, err = c.Schedules.List(ctx, a, ev)
	case "/unschedule":
		words := strings.Fields(args)
		if len(words) > 1 && MaySchedule(a) {
			return say(ctx, out, usageUnschedule)
		}
		id := ""
		if len(words) > 0 {
			id = words[0]
		}
		text, err = c.Schedules.Remove(ctx, a, ev, id)
	}
	var ue *pipeline.UserError
	if errors.As(err, &ue) {
		if ue.Message == msgScheduleRefused {
			return c.refuse(ctx, ev, name, key, out, ue.Message)
		}
		return say(ctx, out, ue.Message)
	}
	if err != nil {
		return err
	}
	return say(ctx, out, text)
}

// addSchedule reads `"<when>" "<prompt>" [channel]`.
func (c *Commands) addSchedule(ctx context.Context, ev *pipeline.Event, a pipeline.Access, args string) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgScheduleRefused)
	}
	words, err := pipeline.SplitArgs(args)
	if err != nil {
		return "", refusal(usageSchedule + " (" + err.Error() + ")")
	}
	// `/schedule resume <id>` runs a paused schedule again (a `when` is
	// never a schedule's id).
	if len(words) == 2 && words[0] == "resume" && schedule.ValidID(words[1]) {
		return c.Schedules.Resume(ctx, a, ev, words[1])
	}
	if len(words) < 2 || len(words) > 3 {
		return "", refusal(usageSchedule)
	}
	r := tools.ScheduleRequest{When: words[0], Prompt: words[1]}
	if len(words) == 3 {
		switch t := strings.ToLower(words[2]); t {
		case "channel", "thread":
			r.Target = t
		default:
			return "", refusal(usageSchedule)
		}
	}
	return c.Schedules.Add(ctx, a, ev, r)
}
