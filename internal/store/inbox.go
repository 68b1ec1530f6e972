package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// The states of an event in the inbox (internal/inbox), defined once,
// beside the statements that move an event between them: received →
// running → answering → answered, or failed or dropped.
const (
	InboxReceived = "received"
	InboxRunning  = "running"
	// InboxAnswering is set just before the first post: a crash then
	// leaves unknown whether the post went out.
	InboxAnswering = "answering"
	InboxAnswered  = "answered"
	InboxFailed    = "failed"
	InboxDropped   = "dropped"
)

// InboxEntry is one event of the durable inbox.
type InboxEntry struct {
	EventID   string
	Kind      string
	ChannelID string
	ThreadTS  string
	UserID    string
	// MsgKey is channel:ts of a message ("" otherwise): a channel mention
	// arrives twice, as two events with one key.
	MsgKey string
	// Event is the pipeline event as JSON, enough to run it again.
	Event json.RawMessage
	State string
	// Owner is the replica that received the event or took it over ('' for
	// a single process; see Fleet).
	Owner    string
	Attempts int
	TraceID  string
	Error    string

	ReceivedAt time.Time
	UpdatedAt  time.Time
}

// InboxReceive records a new event as received, owned by this replica.
// fresh is false when the event is already there (a redelivery, or a
// resumed event): nothing is changed then. The insert is the arbiter
// between replicas: one of them records an event, the others are told.
func (s *Store) InboxReceive(ctx context.Context, e InboxEntry) (fresh bool, err error) {
	fresh, _, err = s.InboxReceiveMark(ctx, e, "")
	return fresh, err
}

// InboxReceiveMark is InboxReceive that also records key as processed, as
// MarkEvent does, in the same write, when the event is fresh: marked is
// true only when this event recorded the key first (its twin — another
// event id, the same key — was not received before). An empty key marks
// nothing.
func (s *Store) InboxReceiveMark(ctx context.Context, e InboxEntry, key string) (fresh, marked bool, err error) {
	if e.EventID == "" || !json.Valid(e.Event) {
		return false, false, fmt.Errorf("inbox receive: an event id and a JSON event are required")
	}
	now := s.now().UnixMilli()
	receive := func(ctx context.Context, tx bun.Tx) error {
		var err error
		fresh, err = oneRow(s.txExec(ctx, tx, qInboxReceive,
			e.EventID, e.Kind, e.ChannelID, e.ThreadTS, e.UserID, e.MsgKey, string(e.Event), InboxReceived, now, now, s.replica))
		if err != nil || !fresh || key == "" {
			return err
		}
		marked, err = oneRow(s.txExec(ctx, tx, qMarkEvent, key, now))
		return err
	}
	if s.pg {
		// On Postgres the receive waits for neither the writer slot nor
		// the writer lock: its two inserts are arbitrated by their unique
		// keys, it reads nothing it writes, and it is the intake of every
		// event: queued behind the turns' writes (of this replica or
		// another), it would hold up the record of each event behind it,
		// and a thread's order across replicas rests on a prompt record
		// (AGENT_ORDER_SETTLE).
		err = s.db.RunInTx(ctx, nil, receive)
	} else {
		err = s.inTx(ctx, receive)
	}
	if err != nil {
		return false, false, fmt.Errorf("inbox receive %s: %w", e.EventID, err)
	}
	return fresh, marked, nil
}

// InboxStart marks the event running, counts the attempt and records the
// trace it runs under; it returns the attempts so far, this one included.
// An event that is no longer received or running (answered meanwhile) is
// left alone, and attempts is 0.
func (s *Store) InboxStart(ctx context.Context, eventID, traceID string) (attempts int, err error) {
	err = s.write(ctx, func(ctx context.Context) error {
		return s.queryRow(ctx, qInboxStart, s.startArgs(eventID, traceID)...).Scan(&attempts)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("inbox start %s: %w", eventID, err)
	}
	return attempts, nil
}

// startArgs are qInboxStart's arguments.
func (s *Store) startArgs(eventID, traceID string) []any {
	return []any{InboxRunning, traceID, s.now().UnixMilli(), eventID, InboxReceived, InboxRunning}
}

// InboxAnswering marks a running event as about to post its first
// answer.
func (s *Store) InboxAnswering(ctx context.Context, eventID string) error {
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, qInboxAnswering, InboxAnswering, s.now().UnixMilli(), eventID, InboxReceived, InboxRunning)
		return err
	})
	if err != nil {
		return fmt.Errorf("inbox answering %s: %w", eventID, err)
	}
	return nil
}

// InboxFinish moves the event to a final state (answered, failed or
// dropped) with an error text for failed. A final state is kept: an event
// already answered stays answered whatever comes after.
func (s *Store) InboxFinish(ctx context.Context, eventID, state, errText string) error {
	if !finalState(state) {
		return fmt.Errorf("inbox finish %s: %q is not a final state", eventID, state)
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, qInboxFinish, s.finishArgs(eventID, state, errText)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("inbox finish %s: %w", eventID, err)
	}
	return nil
}

// finalState reports whether state is one an event ends in.
func finalState(state string) bool {
	return state == InboxAnswered || state == InboxFailed || state == InboxDropped
}

// finishArgs are qInboxFinish's arguments.
func (s *Store) finishArgs(eventID, state, errText string) []any {
	return []any{state, errText, s.now().UnixMilli(), eventID, InboxReceived, InboxRunning, InboxAnswering}
}

// InboxList returns the inbox's events in a state ("" for all), oldest
// first, at most limit (0: no limit).
func (s *Store) InboxList(ctx context.Context, state string, limit int) ([]InboxEntry, error) {
	q := `SELECT event_id, kind, channel_id, thread_ts, user_id, msg_key, event, state, attempts, trace_id, error, received_at, updated_at, owner
		FROM inbox`
	var args []any
	if state != "" {
		q += " WHERE state = ?"
		args = append(args, state)
	}
	q += " ORDER BY received_at, event_id"
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("inbox list: %w", err)
	}
	defer rows.Close()
	var out []InboxEntry
	for rows.Next() {
		var e InboxEntry
		var event string
		var received, updated int64
		if err := rows.Scan(&e.EventID, &e.Kind, &e.ChannelID, &e.ThreadTS, &e.UserID, &e.MsgKey, &event, &e.State,
			&e.Attempts, &e.TraceID, &e.Error, &received, &updated, &e.Owner); err != nil {
			return nil, fmt.Errorf("inbox list: %w", err)
		}
		e.Event = json.RawMessage(event)
		e.ReceivedAt, e.UpdatedAt = fromUnixMilli(received), fromUnixMilli(updated)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inbox list: %w", err)
	}
	return out, nil
}

// InboxRethread moves a received event to another thread of its channel,
// with its new copy: a scheduled channel run, recorded by its claim in the
// thread it was made in, then given the top-level message it answers
// under. An event no longer received (already running) is left alone.
func (s *Store) InboxRethread(ctx context.Context, eventID, threadTS string, event []byte) error {
	if !json.Valid(event) {
		return fmt.Errorf("inbox rethread %s: the event is not JSON", eventID)
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, `UPDATE inbox SET thread_ts = ?, event = ?, updated_at = ? WHERE event_id = ? AND state = ?`,
			threadTS, string(event), s.now().UnixMilli(), eventID, InboxReceived)
		return err
	})
	if err != nil {
		return fmt.Errorf("inbox rethread %s: %w", eventID, err)
	}
	return nil
}

// InboxUnfinished returns the events a crash left received, running or
// answering, oldest first.
func (s *Store) InboxUnfinished(ctx context.Context) ([]InboxEntry, error) {
	var all []InboxEntry
	for _, state := range []string{InboxReceived, InboxRunning, InboxAnswering} {
		some, err := s.InboxList(ctx, state, 0)
		if err != nil {
			return nil, err
		}
		all = append(all, some...)
	}
	// Oldest first across both states.
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].ReceivedAt.Before(all[j-1].ReceivedAt); j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	return all, nil
}

// InboxAnsweredKey reports whether an event with the message key msgKey
// was answered (its twin, when a mention arrived twice).
func (s *Store) InboxAnsweredKey(ctx context.Context, msgKey string) (bool, error) {
	if msgKey == "" {
		return false, nil
	}
	var ok bool
	err := s.queryRow(ctx, "SELECT EXISTS (SELECT 1 FROM inbox WHERE msg_key = ? AND state = ?)",
		msgKey, InboxAnswered).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("inbox answered key: %w", err)
	}
	return ok, nil
}

// PruneInbox deletes the final events last updated before the given time.
func (s *Store) PruneInbox(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx, `DELETE FROM inbox WHERE state IN (?, ?, ?) AND updated_at < ?`,
			InboxAnswered, InboxFailed, InboxDropped, before.UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune inbox: %w", err)
	}
	return n, nil
}
