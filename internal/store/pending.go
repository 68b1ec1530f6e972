package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// pendingWrites are what an event's context owes the store: the event's
// start, the sessions created for it and its final state, not written
// yet. The first write of the Store made with the context (or a context
// made from it) writes them first, in its transaction (in a transaction
// of their own before a write of single statements); a write that fails
// leaves them for the next. Guarded by the writer slot.
type pendingWrites struct {
	eventID, traceID string
	started          bool
	sessions         []*deferredSession
	finish           *owedFinish
	// createdNow are the sessions the running transaction created
	// (flush): they have no messages and were touched by their insert.
	createdNow []string
}

// createdInTx reports whether the transaction running with ctx created
// the session id (a deferred session's row, DeferSession).
func createdInTx(ctx context.Context, id string) bool {
	p, _ := ctx.Value(pendingKey{}).(*pendingWrites)
	return p != nil && slices.Contains(p.createdNow, id)
}

// owedFinish is an event's final state owed by its context.
type owedFinish struct {
	state, text string
	written     func()
}

// deferredSession is a session row owed by an event's context.
type deferredSession struct {
	sess      Session
	written   func()
	cancelled bool
}

type pendingKey struct{}

// WithInboxStart returns ctx carrying the start of eventID (InboxStart:
// running, one more attempt, traceID) without writing it: the first write
// of this Store made with ctx, or a context made from it, records the
// start first, in its own transaction. An event's turn thus starts in the
// write that stores its first effect (its session, its message, its final
// state) instead of a write of its own. Until then the event stays
// received: a crash before it runs the event again as if it had never
// started, which it had not, in effect. The context can also carry the
// event's new session (DeferSession).
func WithInboxStart(ctx context.Context, eventID, traceID string) context.Context {
	return context.WithValue(ctx, pendingKey{}, &pendingWrites{eventID: eventID, traceID: traceID})
}

// pendingOf returns what ctx still owes, if anything; called with the
// writer slot held.
func pendingOf(ctx context.Context) *pendingWrites {
	p, _ := ctx.Value(pendingKey{}).(*pendingWrites)
	if p == nil || (p.started && len(p.sessions) == 0 && p.finish == nil) {
		return nil
	}
	return p
}

// flush writes what p owes in tx. A session row already written (an
// earlier context owed it too) is not a conflict; another session of its
// thread is.
func (s *Store) flush(ctx context.Context, tx bun.Tx, p *pendingWrites) error {
	// The write that takes them says so in its span.
	span := trace.SpanFromContext(ctx)
	if !p.started {
		if _, err := s.txExec(ctx, tx, qInboxStarted, s.startArgs(p.eventID, p.traceID)...); err != nil {
			return fmt.Errorf("inbox start %s: %w", p.eventID, err)
		}
		span.AddEvent("inbox.start")
	}
	for _, d := range p.sessions {
		if d.cancelled {
			continue
		}
		sess := d.sess
		created, err := oneRow(s.txExec(ctx, tx, qInsertSession, sessionArgs(sess)...))
		if created {
			p.createdNow = append(p.createdNow, sess.ID)
		}
		if err == nil && !created {
			var n int
			err = s.txQueryRow(ctx, tx, "SELECT count(*) FROM sessions WHERE session_id = ? AND thread_key = ?", sess.ID, sess.ThreadKey).Scan(&n)
			if err == nil && n == 0 {
				err = ErrConflict
			}
		}
		if err != nil {
			return fmt.Errorf("create session for thread %q: %w", sess.ThreadKey, err)
		}
	}
	if f := p.finish; f != nil {
		if _, err := s.txExec(ctx, tx, qInboxFinish, s.finishArgs(p.eventID, f.state, f.text)...); err != nil {
			return fmt.Errorf("inbox finish %s: %w", p.eventID, err)
		}
		span.AddEvent("inbox.finish", trace.WithAttributes(attribute.String("inbox.state", f.state)))
	}
	return nil
}

// flushed records that p's writes committed and tells the sessions'
// owners.
func (p *pendingWrites) flushed() {
	p.started = true
	for _, d := range p.sessions {
		if !d.cancelled && d.written != nil {
			d.written()
		}
	}
	p.sessions = nil
	if f := p.finish; f != nil {
		p.finish = nil
		if f.written != nil {
			f.written()
		}
	}
}

// OweInboxFinish leaves the final state of the event ctx carries
// (WithInboxStart) to the next write made with ctx, which records it in
// its transaction — an answer's post thus costs no write of its own: its
// tool result takes it. Until then the event stays as it was (answering,
// for a post); Flush writes it when no write came. written is called
// once it is committed. It reports false, and does nothing, when ctx
// carries no event or another one: call InboxFinish then.
func (s *Store) OweInboxFinish(ctx context.Context, eventID, state, errText string, written func()) (bool, error) {
	p, _ := ctx.Value(pendingKey{}).(*pendingWrites)
	if p == nil || p.eventID != eventID {
		return false, nil
	}
	if !finalState(state) {
		return false, fmt.Errorf("inbox finish %s: %q is not a final state", eventID, state)
	}
	err := s.slot(ctx, func(context.Context) error {
		p.finish = &owedFinish{state: state, text: errText, written: written}
		return nil
	})
	return err == nil, err
}

// Flush writes what ctx still owes (WithInboxStart, DeferSession,
// OweInboxFinish), in a transaction of its own; nothing when it owes
// nothing.
func (s *Store) Flush(ctx context.Context) error {
	if p, _ := ctx.Value(pendingKey{}).(*pendingWrites); p == nil {
		return nil
	}
	return s.write(ctx, func(context.Context) error { return nil })
}

// DeferSession leaves the row of a new session to the next write made
// with ctx, which stores it in the same transaction as its own rows (the
// event's message, say): a new thread costs no write of its own. It
// reports false, and does nothing, when ctx carries no event
// (WithInboxStart): create the session at once then. written is called
// once the row is committed; cancel withdraws the row if no write has
// taken it yet. The session is completed and checked as by CreateSession.
func (s *Store) DeferSession(ctx context.Context, sess Session, written func()) (deferred bool, cancel func(), err error) {
	p, _ := ctx.Value(pendingKey{}).(*pendingWrites)
	if p == nil {
		return false, nil, nil
	}
	s.completeSession(&sess)
	if err := validSession(sess); err != nil {
		return false, nil, fmt.Errorf("create session for thread %q: %w", sess.ThreadKey, err)
	}
	d := &deferredSession{sess: sess, written: written}
	err = s.slot(ctx, func(context.Context) error {
		p.sessions = append(p.sessions, d)
		return nil
	})
	if err != nil {
		return false, nil, err
	}
	cancel = func() {
		_ = s.slot(context.WithoutCancel(ctx), func(context.Context) error { d.cancelled = true; return nil })
	}
	return true, cancel, nil
}
