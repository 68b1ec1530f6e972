package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Approval events: the states of an approval, in the order they can happen.
const (
	ApprovalRequested = "requested"
	ApprovalApproved  = "approved"
	ApprovalDenied    = "denied"
	ApprovalAlways    = "always" // approved, and the tool allowed for the rest of the thread
	ApprovalTimedOut  = "timed_out"
	ApprovalExpired   = "expired" // still pending when its turn was stopped or the service stopped
)

// ErrDecided is returned by DecideApproval when the approval is no longer
// pending.
var ErrDecided = errors.New("approval already decided")

// Approval is one approval request and its current state.
type Approval struct {
	ID          string
	ThreadKey   string
	ChannelID   string
	ThreadTS    string
	CardTS      string
	Category    string
	Tool        string
	Summary     string
	Digest      string
	RequestedBy string
	RequestedAt time.Time
	// ActsAs is the tool server whose tool the approval releases when that
	// tool acts with RequestedBy's own account ("auth": "oauth"); "" for
	// any other.
	ActsAs string
	// State is the latest event; DecidedBy and DecidedAt belong to it when
	// it is not "requested".
	State     string
	DecidedBy string
	DecidedAt time.Time
}

type approvalRow struct {
	ApprovalID, ThreadKey, ChannelID, ThreadTS, CardTS string
	Category, Tool, Summary, Digest, RequestedBy       string
	RequestedAt                                        int64
	ActsAs                                             string
	Event, Actor                                       string
	At                                                 int64
}

// scan reads a row of approvalSelect.
func (r *approvalRow) scan(row interface{ Scan(...any) error }) error {
	return row.Scan(&r.ApprovalID, &r.ThreadKey, &r.ChannelID, &r.ThreadTS, &r.CardTS, &r.Category, &r.Tool,
		&r.Summary, &r.Digest, &r.RequestedBy, &r.RequestedAt, &r.ActsAs, &r.Event, &r.Actor, &r.At)
}

func (r approvalRow) approval() Approval {
	a := Approval{ID: r.ApprovalID, ThreadKey: r.ThreadKey, ChannelID: r.ChannelID, ThreadTS: r.ThreadTS, CardTS: r.CardTS,
		Category: r.Category, Tool: r.Tool, Summary: r.Summary, Digest: r.Digest, RequestedBy: r.RequestedBy,
		RequestedAt: fromUnixMilli(r.RequestedAt), ActsAs: r.ActsAs, State: r.Event}
	if r.Event != ApprovalRequested {
		a.DecidedBy, a.DecidedAt = r.Actor, fromUnixMilli(r.At)
	}
	return a
}

// approvalSelect reads approvals with their last event, column by column
// (approvalRow.scan): scanning into a model made bun reflect on it and
// compile its pluraliser's rules at every start, for the pending
// approvals expired then.
const approvalSelect = `
	SELECT a.approval_id, a.thread_key, a.channel_id, a.thread_ts, a.card_ts, a.category, a.tool, a.summary,
		a.digest, a.requested_by, a.requested_at, a.acts_as, e.event, e.actor, e.at FROM approvals a
	JOIN approval_events e ON e.approval_id = a.approval_id
	AND e.seq = (SELECT max(seq) FROM approval_events WHERE approval_id = a.approval_id)`

// CreateApproval records a new pending approval (its "requested" event).
func (s *Store) CreateApproval(ctx context.Context, a Approval) error {
	if a.ID == "" || a.ThreadKey == "" || a.Category == "" {
		return errors.New("create approval: id, thread and category are required")
	}
	at := a.RequestedAt
	if at.IsZero() {
		at = s.now()
	}
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (approval_id, thread_key, channel_id, thread_ts, card_ts,
			category, tool, summary, digest, requested_by, requested_at, acts_as) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
			a.ID, a.ThreadKey, a.ChannelID, a.ThreadTS, a.CardTS, a.Category, a.Tool, a.Summary, a.Digest, a.RequestedBy, at.UnixMilli(),
			a.ActsAs); err != nil {
			return fmt.Errorf("create approval: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO approval_events (approval_id, seq, event, actor, at) VALUES (?, 1, ?, ?, ?)`,
			a.ID, ApprovalRequested, a.RequestedBy, at.UnixMilli()); err != nil {
			return fmt.Errorf("create approval: %w", err)
		}
		return nil
	})
}

// SetApprovalCard records the ts of the approval's card once it is posted.
// It is the one field set after creation: the card exists only after the
// request does.
func (s *Store) SetApprovalCard(ctx context.Context, id, cardTS string) error {
	return s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx, `UPDATE approvals SET card_ts = ? WHERE approval_id = ? AND card_ts = ''`, cardTS, id)
		if err != nil {
			return fmt.Errorf("set approval card: %w", err)
		}
		return requireRow(res)
	})
}

// GetApproval returns an approval with its current state, or ErrNotFound.
func (s *Store) GetApproval(ctx context.Context, id string) (Approval, error) {
	var r approvalRow
	err := r.scan(s.queryRow(ctx, approvalSelect+" WHERE a.approval_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Approval{}, fmt.Errorf("get approval %q: %w", id, err)
	}
	return r.approval(), nil
}

// DecideApproval appends a decision (approved, denied, always, timed_out,
// expired) to a pending approval. It returns ErrDecided when the approval
// was already decided (a second click, a click after the timeout), so that
// exactly one decision wins.
func (s *Store) DecideApproval(ctx context.Context, id, event, actor string) (Approval, error) {
	switch event {
	case ApprovalApproved, ApprovalDenied, ApprovalAlways, ApprovalTimedOut, ApprovalExpired:
	default:
		return Approval{}, fmt.Errorf("decide approval: unknown event %q", event)
	}
	var out Approval
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r approvalRow
		err := r.scan(s.txQueryRow(ctx, tx, approvalSelect+" WHERE a.approval_id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if r.Event != ApprovalRequested {
			out = r.approval()
			return ErrDecided
		}
		now := s.now().UnixMilli()
		if _, err := tx.ExecContext(ctx, `INSERT INTO approval_events (approval_id, seq, event, actor, at)
			VALUES (?, (SELECT max(seq) + 1 FROM approval_events WHERE approval_id = ?), ?, ?, ?)`, id, id, event, actor, now); err != nil {
			return err
		}
		r.Event, r.Actor, r.At = event, actor, now
		out = r.approval()
		return nil
	})
	if err != nil && !errors.Is(err, ErrDecided) {
		return Approval{}, fmt.Errorf("decide approval %q: %w", id, err)
	}
	return out, err
}

// PendingApprovals returns the approvals still waiting for a decision,
// oldest first.
func (s *Store) PendingApprovals(ctx context.Context) ([]Approval, error) {
	return s.approvals(ctx, " WHERE e.event = ? ORDER BY a.requested_at, a.approval_id", ApprovalRequested)
}

// ApprovalsSince returns the approvals requested at or after since, oldest
// first, each with its current state.
func (s *Store) ApprovalsSince(ctx context.Context, since time.Time) ([]Approval, error) {
	return s.approvals(ctx, " WHERE a.requested_at >= ? ORDER BY a.requested_at, a.approval_id", since.UnixMilli())
}

func (s *Store) approvals(ctx context.Context, where string, args ...any) ([]Approval, error) {
	rows, err := s.query(ctx, approvalSelect+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	defer rows.Close()
	out := []Approval{}
	for rows.Next() {
		var r approvalRow
		if err := r.scan(rows); err != nil {
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		out = append(out, r.approval())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return out, nil
}

// ApprovalEvent is one line of an approval's audit trail.
type ApprovalEvent struct {
	ApprovalID string
	Seq        int64
	Event      string
	Actor      string
	At         time.Time
}

// ApprovalEvents returns an approval's whole trail, in order.
func (s *Store) ApprovalEvents(ctx context.Context, id string) ([]ApprovalEvent, error) {
	rows, err := s.query(ctx, `SELECT approval_id, seq, event, actor, at FROM approval_events WHERE approval_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("approval events: %w", err)
	}
	defer rows.Close()
	out := []ApprovalEvent{}
	for rows.Next() {
		var e ApprovalEvent
		var at int64
		if err := rows.Scan(&e.ApprovalID, &e.Seq, &e.Event, &e.Actor, &at); err != nil {
			return nil, fmt.Errorf("approval events: %w", err)
		}
		e.At = fromUnixMilli(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("approval events: %w", err)
	}
	return out, nil
}

// AllowTool records that a thread allowed a tool for the rest of the thread.
func (s *Store) AllowTool(ctx context.Context, threadKey, tool, by string) error {
	return s.write(ctx, func(ctx context.Context) error {
		_, err := s.exec(ctx, `INSERT INTO thread_allows (thread_key, tool, allowed_by, at) VALUES (?, ?, ?, ?)
			ON CONFLICT (thread_key, tool) DO NOTHING`, threadKey, tool, by, s.now().UnixMilli())
		if err != nil {
			return fmt.Errorf("allow tool: %w", err)
		}
		return nil
	})
}

// ToolAllowed reports whether a thread allowed the tool with "always".
func (s *Store) ToolAllowed(ctx context.Context, threadKey, tool string) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT count(*) FROM thread_allows WHERE thread_key = ? AND tool = ?`, threadKey, tool).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("tool allowed: %w", err)
	}
	return n > 0, nil
}
