// Package feedback is the votes on the persona's replies: the clicks on the
// feedback buttons of a final reply (pipeline.ActionFeedback), each stored,
// counted and acknowledged privately to the person who clicked. The
// buttons are drawn by the platform's outbound code (slackio); the votes
// are stored by internal/store (feedback.go), which `agent feedback`
// reads.
package feedback

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// What the person who clicked a feedback button is told, only them.
const (
	MsgGood = "Thanks — noted as a good answer."
	MsgBad  = "Thanks — noted as a bad answer. Tell me in the thread what went wrong and I'll take it into account."
	// MsgUnknown answers a feedback click whose value is neither vote.
	MsgUnknown = "That button is not one I know."
)

// Store keeps the votes (*store.Store).
type Store interface {
	// RecordFeedback stores f, one vote per person per reply, and returns
	// the vote it replaced ("" for none).
	RecordFeedback(ctx context.Context, f store.Feedback) (previous string, err error)
}

// Chat tells the clicker privately.
type Chat interface {
	PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error
}

// Clicks takes the clicks on the feedback buttons of final replies and
// hands every other click to Next (the approval gate). A vote is stored
// (one per person per reply: a second click replaces the first), counted
// when it changed, and acknowledged privately to the clicker. Clicks are
// never gated and never wait behind a thread's turn (the gateway runs
// them at once); they pass the drop stage's trust checks like messages.
//
// Votes is agent_reply_feedback_total{value}, the votes cast for value: a
// first vote adds 1 to its value, the same vote again adds nothing, a
// changed vote adds 1 to its new value. The old value's count is not
// taken back, since a counter only goes up: the current votes are in the
// store (`agent feedback`), and the counter is the rate of opinions given.
type Clicks struct {
	Next  pipeline.Actions
	Store Store
	Chat  Chat
	Votes *prometheus.CounterVec // agent_reply_feedback_total{value}
	Log   *slog.Logger
}

var _ pipeline.Actions = Clicks{}

// Click implements pipeline.Actions.
func (c Clicks) Click(ctx context.Context, ev *pipeline.Event, a pipeline.Access) error {
	if ev.Action == nil || ev.Action.ActionID != pipeline.ActionFeedback {
		return c.Next.Click(ctx, ev, a)
	}
	value := ev.Action.Value
	if value != pipeline.FeedbackGood && value != pipeline.FeedbackBad {
		return c.Chat.PostEphemeral(ctx, ev.ChannelID, ev.ThreadTS, ev.UserID, MsgUnknown)
	}
	previous, err := c.Store.RecordFeedback(ctx, store.Feedback{ChannelID: ev.ChannelID, MessageTS: ev.Action.MessageTS,
		ThreadTS: ev.ThreadTS, UserID: ev.UserID, Value: value})
	if err != nil {
		return err
	}
	if previous != value {
		c.Votes.WithLabelValues(value).Inc()
	}
	c.Log.InfoContext(ctx, "reply feedback", "channel_id", ev.ChannelID, "message_ts", ev.Action.MessageTS,
		"user_id", ev.UserID, "value", value, "previous", previous)
	msg := MsgGood
	if value == pipeline.FeedbackBad {
		msg = MsgBad
	}
	return c.Chat.PostEphemeral(ctx, ev.ChannelID, ev.ThreadTS, ev.UserID, msg)
}
