package schedule

import (
	"context"
	"errors"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Commands is the book as the thread commands reach it (/schedule,
// /schedules, /unschedule and their aliases): the arguments as typed,
// read here. Each answer is the text to say; refused is set when it is
// the role refusal (the commands log it as refused). err is a failure of
// the runtime only.
type Commands struct{ B *Book }

// Schedule is /schedule `"<when>" "<prompt>" [channel]`, or
// /schedule resume <id>.
func (c Commands) Schedule(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (text string, refused bool, err error) {
	if c.B == nil {
		return msgUnavailable, false, nil
	}
	return said(c.add(ctx, a, ev, args))
}

// List is /schedules.
func (c Commands) List(ctx context.Context, a pipeline.Access, ev *pipeline.Event) (text string, refused bool, err error) {
	if c.B == nil {
		return msgUnavailable, false, nil
	}
	return said(c.B.List(ctx, a, ev))
}

// Unschedule is /unschedule <id>.
func (c Commands) Unschedule(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (text string, refused bool, err error) {
	if c.B == nil {
		return msgUnavailable, false, nil
	}
	words := strings.Fields(args)
	if len(words) > 1 && MaySchedule(a) {
		return usageUnschedule, false, nil
	}
	id := ""
	if len(words) > 0 {
		id = words[0]
	}
	return said(c.B.Remove(ctx, a, ev, id))
}

// add reads `"<when>" "<prompt>" [channel]`.
func (c Commands) add(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgRefused)
	}
	words, err := pipeline.SplitArgs(args)
	if err != nil {
		return "", refusal(usageSchedule + " (" + err.Error() + ")")
	}
	// `/schedule resume <id>` runs a paused schedule again (a `when` is
	// never a schedule's id).
	if len(words) == 2 && words[0] == "resume" && ValidID(words[1]) {
		return c.B.Resume(ctx, a, ev, words[1])
	}
	if len(words) < 2 || len(words) > 3 {
		return "", refusal(usageSchedule)
	}
	r := Ask{When: words[0], Prompt: words[1]}
	if len(words) == 3 {
		switch t := strings.ToLower(words[2]); t {
		case "channel", "thread":
			r.Target = t
		default:
			return "", refusal(usageSchedule)
		}
	}
	return c.B.Add(ctx, a, ev, r)
}

// said is the book's answer as a command's: a refusal or a mistake is
// its line to say.
func said(text string, err error) (string, bool, error) {
	var ue *pipeline.UserError
	if errors.As(err, &ue) {
		return ue.Message, ue.Message == msgRefused, nil
	}
	return text, false, err
}
