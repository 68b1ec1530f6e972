package service

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// What the person who clicked a feedback button is told, only them.
const (
	MsgFeedbackGood = "Thanks — noted as a good answer."
	MsgFeedbackBad  = "Thanks — noted as a bad answer. Tell me in the thread what went wrong and I'll take it into account."
)

// feedbackActions takes the clicks on the feedback buttons of final
// replies and hands every other click to next (the approval gate). A vote
// is stored (one per person per reply: a second click replaces the
// first), counted when it changed, and acknowledged privately to the
// clicker. Clicks are never gated and never wait behind a thread's turn
// (the gateway runs them at once); they pass the drop stage's trust checks
// like messages.
//
// agent_reply_feedback_total{value} counts the votes cast for value: a
// first vote adds 1 to its value, the same vote again adds nothing, a
// changed vote adds 1 to its new value. The old value's count is not
// taken back, since a counter only goes up: the current votes are in the
// store (`agent feedback`), and the counter is the rate of opinions given.
type feedbackActions struct {
	next  pipeline.Actions
	store *store.Store
	chat  ChatAPI
	votes *prometheus.CounterVec // agent_reply_feedback_total{value}
	log   *slog.Logger
}

var _ pipeline.Actions = feedbackActions{}

// Click implements pipeline.Actions.
func (f feedbackActions) Click(ctx context.Context, ev *pipeline.Event, a pipeline.Access) error {
	if ev.Action == nil || ev.Action.ActionID != pipeline.ActionFeedback {
		return f.next.Click(ctx, ev, a)
	}
	value := ev.Action.Value
	if value != pipeline.FeedbackGood && value != pipeline.FeedbackBad {
		return f.chat.PostEphemeral(ctx, ev.ChannelID, ev.ThreadTS, ev.UserID, "That button is not one I know.")
	}
	previous, err := f.store.RecordFeedback(ctx, store.Feedback{ChannelID: ev.ChannelID, MessageTS: ev.Action.MessageTS,
		ThreadTS: ev.ThreadTS, UserID: ev.UserID, Value: value})
	if err != nil {
		return err
	}
	if previous != value {
		f.votes.WithLabelValues(value).Inc()
	}
	f.log.InfoContext(ctx, "reply feedback", "channel_id", ev.ChannelID, "message_ts", ev.Action.MessageTS,
		"user_id", ev.UserID, "value", value, "previous", previous)
	msg := MsgFeedbackGood
	if value == pipeline.FeedbackBad {
		msg = MsgFeedbackBad
	}
	return f.chat.PostEphemeral(ctx, ev.ChannelID, ev.ThreadTS, ev.UserID, msg)
}
