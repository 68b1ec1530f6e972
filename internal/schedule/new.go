package schedule

import (
	"strings"
	"time"
)

// Request is a schedule as a person asks for it (the tool's arguments, a
// /schedule command).
type Request struct {
	Creator  string
	Channel  string
	ThreadTS string
	Target   Target // "" is TargetThread
	When     string
	Prompt   string
	Name     string
}

// minGapRuns is how many coming runs New checks for MinInterval: enough
// to see an expression whose runs bunch up (a list of minutes, a
// daylight-saving change) rather than only the first gap.
const minGapRuns = 50

// New checks req at now in loc (Zone's answer) and returns the schedule
// to store, due first at NextRunAt. Its errors match ErrInvalid, one line
// naming what is wrong: the pinned `invalid cron expression: <why>`, a
// time in the past, an empty prompt, an unknown target, a recurring
// schedule more often than MinInterval.
func New(req Request, loc *time.Location, now time.Time) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	// Stored in milliseconds: the schedule parsed back from the store
	// must have the same origin as this one.
	now = time.UnixMilli(now.UnixMilli()).UTC()
	target := req.Target
	if target == "" {
		target = TargetThread
	}
	if target != TargetThread && target != TargetChannel {
		return Schedule{}, invalidf("unknown target %q (want thread or channel)", string(target))
	}
	prompt := strings.TrimSpace(req.Prompt)
	if prompt == "" {
		return Schedule{}, invalidf("empty prompt: say what the persona should do at each run")
	}
	spec, err := Parse(req.When, loc, now)
	if err != nil {
		return Schedule{}, err
	}
	next := spec.Next(now)
	if next.IsZero() {
		return Schedule{}, invalidf("time in the past: %s is before now (%s)", spec.at.In(loc).Format(time.RFC3339), now.In(loc).Format(time.RFC3339))
	}
	if !spec.Once() {
		if gap := spec.minGap(now, minGapRuns); gap > 0 && gap < MinInterval {
			return Schedule{}, invalidf("too frequent: %q runs %v apart; a recurring schedule runs at most once a minute", spec.When(), gap)
		}
	}
	return Schedule{
		ID:        NewID(),
		Creator:   req.Creator,
		Channel:   req.Channel,
		ThreadTS:  req.ThreadTS,
		Target:    target,
		When:      spec.When(),
		TZ:        loc.String(),
		Prompt:    prompt,
		Name:      strings.TrimSpace(req.Name),
		NextRunAt: next,
		CreatedAt: now,
	}, nil
}
