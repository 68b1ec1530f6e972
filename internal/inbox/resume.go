package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Lines posted for events a stop cut short.
const (
	// MsgResumed tells the user the runtime restarted while working on
	// their message and goes on with it.
	MsgResumed = "I was restarted while working on this — picking it up again."
	// MsgPoisoned ends an event whose turn crashed the runtime twice.
	MsgPoisoned = "I couldn't finish this (the runtime failed twice); the operator has the details."
	// MsgMaybeAnswered ends an event whose first answer was being posted
	// when the runtime stopped, when the thread cannot be read to know
	// whether it landed: posting it again could answer twice.
	MsgMaybeAnswered = "I was restarted just as I was answering this. If you don't see my answer above, please ask again."
)

// poisonAttempts is how many runs of an event may end in a crash before
// it is given up: a third try would most likely crash again.
const poisonAttempts = 2

// readBack is a Chat that can read back whether the answer to an event is
// in its thread.
type readBack interface {
	Delivered(ctx context.Context, channelID, threadTS, eventID string) (bool, error)
}

// answerLanded reports whether an answer to ev is in its thread; an error
// when the chat cannot tell.
func (r *Recorder) answerLanded(ctx context.Context, ev *pipeline.Event) (bool, error) {
	rb, ok := r.o.Chat.(readBack)
	if !ok {
		return false, errors.New("the chat API cannot read a thread back")
	}
	return rb.Delivered(ctx, ev.ChannelID, ev.RootTS(), ev.ID)
}

// ResumeUnfinished runs again what an earlier run left unfinished (see
// Resume): the unfinished events received before since, when this run
// started; those received since are this run's own, delivered by the
// transport while this runs.
func (r *Recorder) ResumeUnfinished(ctx context.Context, since time.Time, deliver func(*pipeline.Event)) {
	entries, err := r.o.Store.InboxUnfinished(ctx)
	if err != nil {
		r.o.Log.ErrorContext(ctx, "inbox: unfinished events not read; they are not resumed", "err", err)
		return
	}
	mine := func(e store.InboxEntry) bool { return !e.ReceivedAt.Before(since.Truncate(time.Millisecond)) }
	r.Resume(ctx, slices.DeleteFunc(entries, mine), deliver)
}

// Resume settles or runs again, through deliver, each event a stopped run
// left unfinished: each gets a line in its thread saying so and runs from
// the persisted history; one whose runs crashed the runtime twice is given
// up with a line saying that instead; one whose answer was being posted is
// read back from its thread. Of a mention's two events only one runs, and
// none when the other was answered.
func (r *Recorder) Resume(ctx context.Context, entries []store.InboxEntry, deliver func(*pipeline.Event)) {
	seen := map[string]bool{}
	for _, e := range entries {
		var ev pipeline.Event
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			r.o.Log.ErrorContext(ctx, "inbox: event not decodable; given up", "event_id", e.EventID, "err", err)
			r.finish(ctx, &pipeline.Event{ID: e.EventID}, store.InboxFailed, fmt.Errorf("not decodable: %w", err))
			continue
		}
		if e.MsgKey != "" {
			twin, err := r.o.Store.InboxAnsweredKey(ctx, e.MsgKey)
			if err != nil {
				r.o.Log.ErrorContext(ctx, "inbox: twin check", "event_id", e.EventID, "err", err)
			}
			if twin || seen[e.MsgKey] {
				r.finish(ctx, &ev, store.InboxDropped, nil)
				continue
			}
			seen[e.MsgKey] = true
		}
		if r.resumeOne(ctx, e, &ev) {
			ev.Resumed = true
			deliver(&ev)
		}
	}
}

// resumeOne settles ev, the event of e, or reports that it runs again;
// it says in ev's thread whichever it is, when it is not plain.
func (r *Recorder) resumeOne(ctx context.Context, e store.InboxEntry, ev *pipeline.Event) (again bool) {
	thread := pipeline.Message{ChannelID: ev.ChannelID, ThreadTS: ev.RootTS()}
	if e.State == store.InboxAnswering {
		// The first answer was being posted: read the thread to know
		// whether it landed.
		landed, err := r.answerLanded(ctx, ev)
		switch {
		case err == nil && landed:
			r.o.Log.InfoContext(ctx, "inbox: the answer had landed before the stop", "event_id", e.EventID,
				"channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "trace_id", e.TraceID)
			r.finish(ctx, ev, store.InboxAnswered, nil)
			return false
		case err != nil:
			r.o.Log.WarnContext(ctx, "inbox: stopped while posting an answer, which may not have landed; told the thread",
				"event_id", e.EventID, "channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "trace_id", e.TraceID, "err", err)
			thread.Text = MsgMaybeAnswered
			if _, err := r.o.Chat.Post(ctx, thread); err != nil {
				r.o.Log.ErrorContext(ctx, "inbox: line not posted", "event_id", e.EventID, "err", err)
			}
			r.finish(ctx, ev, store.InboxAnswered, nil)
			return false
		}
		// It did not land: the turn is resumed like any other.
	}
	if e.Attempts >= poisonAttempts {
		r.o.Log.ErrorContext(ctx, "inbox: event crashed the runtime twice; given up", "event_id", e.EventID,
			"channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "attempts", e.Attempts, "trace_id", e.TraceID)
		// The line is tagged with the event, and a start that finds it
		// already in the thread (a stop between posting it and settling
		// the event) does not say it twice.
		if told, err := r.answerLanded(ctx, ev); err == nil && told {
			r.o.Log.InfoContext(ctx, "inbox: the poison line had landed before the stop", "event_id", e.EventID)
		} else {
			thread.Text, thread.For = MsgPoisoned, ev.ID
			if _, err := r.o.Chat.Post(ctx, thread); err != nil {
				r.o.Log.ErrorContext(ctx, "inbox: poison line not posted", "event_id", e.EventID, "err", err)
			}
		}
		r.finish(ctx, ev, store.InboxFailed, fmt.Errorf("the runtime crashed during %d runs (last trace %s)", e.Attempts, e.TraceID))
		r.count("poisoned")
		return false
	}
	r.o.Log.InfoContext(ctx, "inbox: resuming an event left unfinished", "event_id", e.EventID,
		"channel_id", e.ChannelID, "thread_ts", e.ThreadTS, "attempts", e.Attempts, "trace_id", e.TraceID)
	if e.Attempts > 0 {
		// Its turn had begun: say why it starts over. One that never
		// started (queued, or handed back by a replica that stopped)
		// just runs.
		thread.Text = MsgResumed
		if _, err := r.o.Chat.Post(ctx, thread); err != nil {
			r.o.Log.WarnContext(ctx, "inbox: resume line not posted", "event_id", e.EventID, "err", err)
		}
	}
	r.count("resumed")
	return true
}
