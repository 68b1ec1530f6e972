package feedback_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/internal/feedback"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// votes is a feedback.Store in memory: one vote per person per reply.
type votes struct {
	m    map[string]string // channel/message/user → value
	rec  []store.Feedback
	fail error
}

func (v *votes) RecordFeedback(_ context.Context, f store.Feedback) (string, error) {
	if v.fail != nil {
		return "", v.fail
	}
	v.rec = append(v.rec, f)
	k := f.ChannelID + "/" + f.MessageTS + "/" + f.UserID
	previous := v.m[k]
	v.m[k] = f.Value
	return previous, nil
}

// post is a private message the chat was asked to post.
type post struct{ channel, thread, user, text string }

type chat struct{ posts []post }

func (c *chat) PostEphemeral(_ context.Context, channelID, threadTS, userID, text string) error {
	c.posts = append(c.posts, post{channelID, threadTS, userID, text})
	return nil
}

// next records the clicks handed on.
type next struct{ clicks []*pipeline.Event }

func (n *next) Click(_ context.Context, ev *pipeline.Event, _ pipeline.Access) error {
	n.clicks = append(n.clicks, ev)
	return nil
}

type world struct {
	clicks feedback.Clicks
	votes  *votes
	chat   *chat
	next   *next
	count  *prometheus.CounterVec
	log    *bytes.Buffer
}

func newWorld() *world {
	w := &world{votes: &votes{m: map[string]string{}}, chat: &chat{}, next: &next{}, log: &bytes.Buffer{},
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agent_reply_feedback_total"}, []string{"value"})}
	w.clicks = feedback.Clicks{Next: w.next, Store: w.votes, Chat: w.chat, Votes: w.count,
		Log: slog.New(slog.NewTextHandler(w.log, nil))}
	return w
}

// vote is user's click on the feedback button value of reply 5.2 in
// thread 5.0 of channel C1.
func vote(user, value string) *pipeline.Event {
	return &pipeline.Event{Kind: pipeline.KindAction, ChannelID: "C1", ThreadTS: "5.0", UserID: user,
		Action: &pipeline.Action{ActionID: pipeline.ActionFeedback, Value: value, MessageTS: "5.2"}}
}

func (w *world) click(t *testing.T, ev *pipeline.Event) {
	t.Helper()
	if err := w.clicks.Click(t.Context(), ev, pipeline.Access{UserID: ev.UserID}); err != nil {
		t.Fatalf("Click: %v", err)
	}
}

func (w *world) counted(value string) float64 {
	return testutil.ToFloat64(w.count.WithLabelValues(value))
}

// A vote is stored, acknowledged to the clicker alone in the thread, and
// counted when it changed: the same vote again adds nothing, a changed
// one adds 1 to its new value.
func TestVotes(t *testing.T) {
	w := newWorld()
	steps := []struct {
		user, value string
		ack         string
		good, bad   float64 // the counts after the click
	}{
		{"U1", pipeline.FeedbackGood, feedback.MsgGood, 1, 0},
		{"U1", pipeline.FeedbackGood, feedback.MsgGood, 1, 0}, // the same vote again
		{"U1", pipeline.FeedbackBad, feedback.MsgBad, 1, 1},   // changed
		{"U2", pipeline.FeedbackBad, feedback.MsgBad, 1, 2},   // another person
	}
	for i, s := range steps {
		w.click(t, vote(s.user, s.value))
		if got := w.votes.rec[i]; got != (store.Feedback{ChannelID: "C1", MessageTS: "5.2", ThreadTS: "5.0", UserID: s.user, Value: s.value}) {
			t.Errorf("step %d: stored %+v", i, got)
		}
		if got, want := w.chat.posts[i], (post{"C1", "5.0", s.user, s.ack}); got != want {
			t.Errorf("step %d: told %+v, want %+v", i, got, want)
		}
		if w.counted(pipeline.FeedbackGood) != s.good || w.counted(pipeline.FeedbackBad) != s.bad {
			t.Errorf("step %d: counted good %v bad %v, want %v %v", i, w.counted(pipeline.FeedbackGood),
				w.counted(pipeline.FeedbackBad), s.good, s.bad)
		}
	}
	if len(w.next.clicks) != 0 {
		t.Errorf("votes were handed on: %d", len(w.next.clicks))
	}
	if !strings.Contains(w.log.String(), `msg="reply feedback"`) || !strings.Contains(w.log.String(), "previous=good") {
		t.Errorf("log:\n%s", w.log)
	}
}

// Every other click goes to the next handler (the approval gate),
// untouched.
func TestOtherClicksHandedOn(t *testing.T) {
	w := newWorld()
	approve := &pipeline.Event{Kind: pipeline.KindAction, ChannelID: "C1", UserID: "U1",
		Action: &pipeline.Action{ActionID: pipeline.ActionApprove, Value: "ap1"}}
	bare := &pipeline.Event{Kind: pipeline.KindAction, ChannelID: "C1", UserID: "U1"}
	w.click(t, approve)
	w.click(t, bare)
	if len(w.next.clicks) != 2 || w.next.clicks[0] != approve || w.next.clicks[1] != bare {
		t.Fatalf("handed on %v, want the two clicks", w.next.clicks)
	}
	if len(w.votes.rec) != 0 || len(w.chat.posts) != 0 {
		t.Errorf("stored %v, told %v", w.votes.rec, w.chat.posts)
	}
}

// A feedback click with a value that is no vote is answered, privately,
// and neither stored nor counted.
func TestUnknownVote(t *testing.T) {
	w := newWorld()
	w.click(t, vote("U1", "meh"))
	if got, want := w.chat.posts, []post{{"C1", "5.0", "U1", feedback.MsgUnknown}}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("told %v, want %v", got, want)
	}
	if len(w.votes.rec) != 0 || w.counted(pipeline.FeedbackGood)+w.counted(pipeline.FeedbackBad) != 0 || len(w.next.clicks) != 0 {
		t.Errorf("stored %v, handed on %v", w.votes.rec, w.next.clicks)
	}
}

// A vote the store could not keep fails the click: not counted, not
// acknowledged.
func TestVoteNotStored(t *testing.T) {
	w := newWorld()
	w.votes.fail = errors.New("database gone")
	if err := w.clicks.Click(t.Context(), vote("U1", pipeline.FeedbackGood), pipeline.Access{}); !errors.Is(err, w.votes.fail) {
		t.Fatalf("Click = %v, want the store's error", err)
	}
	if len(w.chat.posts) != 0 || w.counted(pipeline.FeedbackGood) != 0 {
		t.Errorf("told %v, counted %v", w.chat.posts, w.counted(pipeline.FeedbackGood))
	}
}
