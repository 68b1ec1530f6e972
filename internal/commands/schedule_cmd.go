package commands

import (
	"context"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Schedules answers /schedule, /schedules and /unschedule (and their
// aliases): internal/schedule reads the arguments and applies the rules,
// the same book the agent_schedule tools use. Each answer is the text to
// say; refused marks the role refusal; err is a failure of the runtime.
type Schedules interface {
	Schedule(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (text string, refused bool, err error)
	List(ctx context.Context, a pipeline.Access, ev *pipeline.Event) (text string, refused bool, err error)
	Unschedule(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (text string, refused bool, err error)
}

// msgNoSchedules answers the schedule commands where no book is wired.
const msgNoSchedules = "Cron jobs are not available here."

// schedule runs /schedule, /schedules and /unschedule.
func (c *Commands) schedule(ctx context.Context, ev *pipeline.Event, a pipeline.Access, name, key, args string, out pipeline.Outbox) error {
	if c.Schedules == nil {
		return say(ctx, out, msgNoSchedules)
	}
	var text string
	var refused bool
	var err error
	switch name {
	case "/schedule":
		text, refused, err = c.Schedules.Schedule(ctx, a, ev, args)
	case "/schedules":
		text, refused, err = c.Schedules.List(ctx, a, ev)
	case "/unschedule":
		text, refused, err = c.Schedules.Unschedule(ctx, a, ev, args)
	}
	switch {
	case err != nil:
		return err
	case refused:
		return c.refuse(ctx, ev, name, key, out, text)
	}
	return say(ctx, out, text)
}
