package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/persona-runtime/agent/internal/schedule"
)

// The store keeps the schedules (migrations/0009_schedules) and serves
// the scheduler's, the book's and the runs' stores; a schedule there is
// none of is an error matching both ErrNotFound and schedule.ErrNotFound.
var (
	_ schedule.Store     = (*Store)(nil)
	_ schedule.BookStore = (*Store)(nil)
	_ schedule.RunStore  = (*Store)(nil)
)

// noSchedule is err, matching schedule.ErrNotFound too when it matches
// ErrNotFound (the schedule package cannot name the store's).
func noSchedule(err error) error {
	if errors.Is(err, ErrNotFound) {
		return scheduleNotFound{err}
	}
	return err
}

type scheduleNotFound struct{ error }

func (e scheduleNotFound) Unwrap() error        { return e.error }
func (e scheduleNotFound) Is(target error) bool { return target == schedule.ErrNotFound }

const scheduleColumns = `id, creator, channel_id, thread_ts, target, when_expr, tz, prompt, name,
	next_run_at, last_run_at, missed, paused, created_at`

// idTries is how many fresh ids CreateSchedule tries when one is taken (a
// one in ten million chance each at a hundred schedules).
const idTries = 3

// CreateSchedule stores sc (schedule.New's) and returns it as stored: its
// id is a fresh one when sc's was empty or taken. At most max schedules
// per persona, counted in the same transaction (serialised across
// replicas on Postgres): past it, an error matching schedule.ErrLimit.
func (s *Store) CreateSchedule(ctx context.Context, sc schedule.Schedule, max int) (schedule.Schedule, error) {
	if sc.ID == "" {
		sc.ID = schedule.NewID()
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = s.now()
	}
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var n int
		if err := s.txQueryRow(ctx, tx, `SELECT count(*) FROM schedules`).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return schedule.LimitError(max)
		}
		for try := 0; ; try++ {
			res, err := s.txExec(ctx, tx, `INSERT INTO schedules (`+scheduleColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
				sc.ID, sc.Creator, sc.Channel, sc.ThreadTS, string(sc.Target), sc.When, sc.TZ, sc.Prompt, sc.Name,
				sc.NextRunAt.UnixMilli(), milliOrZero(sc.LastRunAt), sc.Missed, sc.Paused, sc.CreatedAt.UnixMilli())
			if won, err := oneRow(res, err); err != nil || won {
				return err
			}
			if try == idTries-1 {
				return fmt.Errorf("schedule %s: %w", sc.ID, ErrConflict)
			}
			sc.ID = schedule.NewID()
		}
	})
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("create schedule: %w", err)
	}
	return s.Schedule(ctx, sc.ID)
}

// Schedule is the schedule id, or an error matching ErrNotFound.
func (s *Store) Schedule(ctx context.Context, id string) (schedule.Schedule, error) {
	sc, err := scanSchedule(s.queryRow(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return schedule.Schedule{}, fmt.Errorf("schedule %s: %w", id, noSchedule(err))
	}
	return sc, nil
}

// Schedules lists every schedule, paused ones too, soonest first.
func (s *Store) Schedules(ctx context.Context) ([]schedule.Schedule, error) {
	out, err := s.schedules(ctx, `SELECT `+scheduleColumns+` FROM schedules ORDER BY next_run_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// RemoveSchedule deletes the schedule id; an error matching ErrNotFound
// when there is none.
func (s *Store) RemoveSchedule(ctx context.Context, id string) error {
	err := s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx, `DELETE FROM schedules WHERE id = ?`, id)
		if err != nil {
			return err
		}
		return requireRow(res)
	})
	if err != nil {
		return fmt.Errorf("remove schedule %s: %w", id, noSchedule(err))
	}
	return nil
}

// SetSchedulePaused pauses or resumes the schedule id; an error matching
// ErrNotFound when there is none. A resumed schedule whose next run has
// passed is planned by the catch-up rule at the timer's next pass.
func (s *Store) SetSchedulePaused(ctx context.Context, id string, paused bool) error {
	err := s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx, `UPDATE schedules SET paused = ? WHERE id = ?`, paused, id)
		if err != nil {
			return err
		}
		return requireRow(res)
	})
	if err != nil {
		return fmt.Errorf("pause schedule %s: %w", id, noSchedule(err))
	}
	return nil
}

// ResumeSchedule runs the paused schedule id again, as creator from now
// on, its next run at next (the caller plans it: the runs missed while it
// was paused are not caught up). resumed is false, and nothing changes,
// when it is not paused; an error matching ErrNotFound when there is
// none.
func (s *Store) ResumeSchedule(ctx context.Context, id, creator string, next time.Time) (resumed bool, err error) {
	err = s.write(ctx, func(ctx context.Context) error {
		resumed, err = oneRow(s.exec(ctx, `UPDATE schedules SET paused = ?, creator = ?, next_run_at = ? WHERE id = ? AND paused`,
			false, creator, next.UnixMilli(), id))
		if err != nil || resumed {
			return err
		}
		var n int
		if err := s.queryRow(ctx, `SELECT count(*) FROM schedules WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("resume schedule %s: %w", id, noSchedule(err))
	}
	return resumed, nil
}

// PauseSchedule pauses the schedule id; one that is gone is no error
// (schedule.Store).
func (s *Store) PauseSchedule(ctx context.Context, id string) error {
	if err := s.SetSchedulePaused(ctx, id, true); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// PauseSchedulesOf pauses every running schedule of creator (who lost the
// role that let them schedule work, or left) and returns them, so that
// the manager can be told in each one's thread.
func (s *Store) PauseSchedulesOf(ctx context.Context, creator string) ([]schedule.Schedule, error) {
	var out []schedule.Schedule
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		rows, err := tx.Tx.QueryContext(ctx, s.bind(`SELECT `+scheduleColumns+` FROM schedules WHERE creator = ? AND NOT paused ORDER BY next_run_at, id`), creator)
		if err != nil {
			return err
		}
		out, err = scanSchedules(rows)
		if err != nil {
			return err
		}
		_, err = s.txExec(ctx, tx, `UPDATE schedules SET paused = ? WHERE creator = ? AND NOT paused`, true, creator)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pause schedules of %s: %w", creator, err)
	}
	for i := range out {
		out[i].Paused = true
	}
	return out, nil
}

// NextScheduleDue is the earliest next run of the schedules not paused;
// ok is false when there is none (schedule.Store). One read of the index
// schedules_due, whatever the number of schedules.
func (s *Store) NextScheduleDue(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	if err := s.queryRow(ctx, `SELECT min(next_run_at) FROM schedules WHERE NOT paused`).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("next schedule due: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return fromUnixMilli(at.Int64), true, nil
}

// DueSchedules lists the schedules not paused due at now, earliest first,
// at most limit (schedule.Store).
func (s *Store) DueSchedules(ctx context.Context, now time.Time, limit int) ([]schedule.Schedule, error) {
	// The limit is written into the statement, not bound (see stmt.go):
	// the scheduler asks for one batch size.
	out, err := s.schedules(ctx, `SELECT `+scheduleColumns+` FROM schedules
		WHERE NOT paused AND next_run_at <= ? ORDER BY next_run_at, id LIMIT `+strconv.Itoa(limit), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("due schedules: %w", err)
	}
	return out, nil
}

// ClaimSchedule moves a due schedule on in one conditional statement: only
// while it is not paused and its next run still equals c.Due. Of claimers
// racing on one due time (replicas), exactly one changes the row and wins;
// the others find it moved (on Postgres the second UPDATE waits for the
// first's row lock, then re-reads the row and no longer matches). A c.Next
// of zero deletes the schedule (a one-off that came) (schedule.Store).
func (s *Store) ClaimSchedule(ctx context.Context, c schedule.Claim) (bool, error) {
	var won bool
	var err error
	if c.Record != nil && !c.Ran.IsZero() && !c.Next.IsZero() {
		// The claim and the run's inbox record in one transaction: a
		// crash after the claim leaves the run to the inbox.
		err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			var err error
			won, err = oneRow(s.txExec(ctx, tx, qClaimRan, c.Next.UnixMilli(), c.Ran.UnixMilli(), c.Missed, c.ID, c.Due.UnixMilli()))
			if err != nil || !won {
				return err
			}
			return s.recordRun(ctx, tx, c.Record)
		})
	} else if c.Record != nil && !c.Ran.IsZero() {
		err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			var err error
			won, err = oneRow(s.txExec(ctx, tx, qClaimLast, c.ID, c.Due.UnixMilli()))
			if err != nil || !won {
				return err
			}
			return s.recordRun(ctx, tx, c.Record)
		})
	} else {
		err = s.write(ctx, func(ctx context.Context) error {
			var err error
			switch {
			case c.Next.IsZero():
				won, err = oneRow(s.exec(ctx, qClaimLast, c.ID, c.Due.UnixMilli()))
			case c.Ran.IsZero(): // skipped: the last run stays
				won, err = oneRow(s.exec(ctx, qClaimSkipped, c.Next.UnixMilli(), c.Missed, c.ID, c.Due.UnixMilli()))
			default:
				won, err = oneRow(s.exec(ctx, qClaimRan, c.Next.UnixMilli(), c.Ran.UnixMilli(), c.Missed, c.ID, c.Due.UnixMilli()))
			}
			return err
		})
	}
	if err != nil {
		return false, fmt.Errorf("claim schedule %s: %w", c.ID, err)
	}
	return won, nil
}

// The claims: one conditional statement each, won only while the schedule
// is still due at the time read and not paused.
const (
	qClaimLast    = `DELETE FROM schedules WHERE id = ? AND next_run_at = ? AND NOT paused`
	qClaimSkipped = `UPDATE schedules SET next_run_at = ?, missed = missed + ?
		WHERE id = ? AND next_run_at = ? AND NOT paused`
	qClaimRan = `UPDATE schedules SET next_run_at = ?, last_run_at = ?, missed = missed + ?
		WHERE id = ? AND next_run_at = ? AND NOT paused`
)

// recordRun writes a claimed run's inbox record in tx, as InboxReceive
// does; a record already there (the same due time claimed before a
// crash) is left as it is. rec is Claim.Record: an *InboxEntry.
func (s *Store) recordRun(ctx context.Context, tx bun.Tx, rec any) error {
	r, ok := rec.(*InboxEntry)
	if !ok || r == nil {
		return fmt.Errorf("record run: the record is a %T, not an *InboxEntry", rec)
	}
	if r.EventID == "" || !json.Valid(r.Event) {
		return fmt.Errorf("record run: an event id and a JSON event are required")
	}
	now := s.now().UnixMilli()
	_, err := s.txExec(ctx, tx, qInboxReceive, r.EventID, r.Kind, r.ChannelID, r.ThreadTS, r.UserID, "", string(r.Event),
		InboxReceived, now, now, s.replica)
	return err
}

func (s *Store) schedules(ctx context.Context, query string, args ...any) ([]schedule.Schedule, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanSchedules(rows)
}

func scanSchedules(rows *sql.Rows) ([]schedule.Schedule, error) {
	defer rows.Close()
	var out []schedule.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanSchedule(r scanner) (schedule.Schedule, error) {
	var sc schedule.Schedule
	var target string
	var next, last, created int64
	err := r.Scan(&sc.ID, &sc.Creator, &sc.Channel, &sc.ThreadTS, &target, &sc.When, &sc.TZ, &sc.Prompt, &sc.Name,
		&next, &last, &sc.Missed, &sc.Paused, &created)
	if err != nil {
		return schedule.Schedule{}, err
	}
	sc.Target = schedule.Target(target)
	sc.NextRunAt, sc.CreatedAt = fromUnixMilli(next), fromUnixMilli(created)
	if last != 0 {
		sc.LastRunAt = fromUnixMilli(last)
	}
	return sc, nil
}

// milliOrZero is t in Unix milliseconds, 0 for the zero time.
func milliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// ScheduleRunUnfinished reports whether a run of the schedule id is in the
// inbox and not settled (received, running or answering), on any replica:
// its next due time is then skipped as busy rather than queued behind it.
// The inbox is pruned of settled rows, so the read stays small.
func (s *Store) ScheduleRunUnfinished(ctx context.Context, id string) (bool, error) {
	var n int
	prefix := schedule.RunIDPrefix(id)
	err := s.queryRow(ctx, `SELECT count(*) FROM inbox WHERE substr(event_id, 1, ?) = ? AND state IN (?, ?, ?)`,
		utf8.RuneCountInString(prefix), prefix, InboxReceived, InboxRunning, InboxAnswering).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("schedule %s: unfinished run: %w", id, err)
	}
	return n > 0, nil
}
