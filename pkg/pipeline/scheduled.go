package pipeline

import (
	"context"
	"errors"
	"fmt"
)

// ScheduleGate decides whether a scheduled run (KindSchedule) goes on, with
// its creator's authority as the auth stage resolved it: a creator who may
// no longer schedule work (lost the role, left, blocked), or no longer be
// heard where it runs (muted, the thread or channel muted, a trust layer
// that no longer admits them), has the schedule paused and the manager
// told, by the gate, and the run stops there.
type ScheduleGate interface {
	Allow(ctx context.Context, ev *Event, a Access) (bool, error)
}

// AgentOption adds an optional part to the agent stage.
type AgentOption func(*agentOptions)

type agentOptions struct {
	schedules ScheduleGate
}

// WithSchedules makes the agent stage run scheduled runs: each passes g,
// then runs as a turn in its target thread. Without it a KindSchedule
// event has no rule and is an error of the event.
func WithSchedules(g ScheduleGate) AgentOption {
	return func(o *agentOptions) { o.schedules = g }
}

// ScheduledFailedPrefix starts the line a failed scheduled run posts in
// its target (interfaces.md, "Schedules").
const ScheduledFailedPrefix = "scheduled run failed: "

// scheduledFailure is the line a failed run posts: a UserError's message
// (safe to show), else a reason that names no detail.
func scheduledFailure(err error) string {
	var ue *UserError
	if errors.As(err, &ue) {
		return ScheduledFailedPrefix + ue.Message
	}
	return ScheduledFailedPrefix + "an error stopped it; the operator has the details"
}

// scheduledRule runs a scheduled run: the gate, then the turn; a turn that
// failed posts the pinned failure line instead of the apology.
func scheduledRule(g ScheduleGate, agent Agent) rule {
	return func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		a, _ := AccessFromContext(ctx)
		ok, err := g.Allow(ctx, ev, a)
		if err != nil {
			return OutcomeError, "", fmt.Errorf("schedule gate: %w", err)
		}
		if !ok {
			return OutcomeDone, "schedule_paused", nil
		}
		out := newOutbox(ctx, ev, next)
		s, _ := SessionFromContext(ctx)
		err = agent.Turn(ctx, &Turn{Event: ev, Session: s, Access: a, Out: out})
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			if _, perr := out.send(ctx, ReplyPost, "", scheduledFailure(err), false); perr != nil {
				err = errors.Join(err, fmt.Errorf("post failure: %w", perr))
			}
		}
		if err == nil && ctx.Err() == nil {
			out.askFeedback(ctx)
		}
		return OutcomeDone, "schedule", err
	}
}
