package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Ingest job statuses (kb_ingest_jobs.status).
const (
	IngestRunning   = "running"
	IngestCompleted = "completed"
	IngestFailed    = "failed"
	IngestExpired   = "expired" // its heartbeat stopped: the run died
)

// IngestStaleReason is the reason recorded on a job expired for a stale
// heartbeat.
const IngestStaleReason = "heartbeat timeout"

// ErrIngestRunning is returned by AcquireIngest when a live ingest of the
// label holds the lock.
var ErrIngestRunning = errors.New("another ingest is already running")

// IngestJob is one /ingest run of a knowledge base.
type IngestJob struct {
	ID          string
	Label       string
	TriggeredBy string
	Status      string
	Reason      string
	StartedAt   time.Time
	HeartbeatAt time.Time
	FinishedAt  time.Time // zero while running
}

type ingestRow struct {
	JobID       string `bun:"job_id"`
	Label       string `bun:"label"`
	TriggeredBy string `bun:"triggered_by"`
	Status      string `bun:"status"`
	Reason      string `bun:"reason"`
	StartedAt   int64  `bun:"started_at"`
	HeartbeatAt int64  `bun:"heartbeat_at"`
	FinishedAt  int64  `bun:"finished_at"`
}

func (r ingestRow) job() IngestJob {
	j := IngestJob{ID: r.JobID, Label: r.Label, TriggeredBy: r.TriggeredBy, Status: r.Status, Reason: r.Reason,
		StartedAt: fromUnixMilli(r.StartedAt), HeartbeatAt: fromUnixMilli(r.HeartbeatAt)}
	if r.FinishedAt != 0 {
		j.FinishedAt = fromUnixMilli(r.FinishedAt)
	}
	return j
}

// AcquireIngest takes the ingest lock of label for a new running job
// triggered by the user by, and returns the job's id. In the same
// transaction it first expires a running job of the label whose heartbeat
// is older than staleAfter (status expired, reason "heartbeat timeout"): its
// process died without finishing. It returns ErrIngestRunning when a live
// job holds the lock.
func (s *Store) AcquireIngest(ctx context.Context, label, by string, staleAfter time.Duration) (string, error) {
	if label == "" || staleAfter <= 0 {
		return "", errors.New("acquire ingest: a label and a positive staleAfter are required")
	}
	id := NewID()
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		now := s.now()
		if _, err := tx.ExecContext(ctx, `UPDATE kb_ingest_jobs SET status = ?, reason = ?, finished_at = ?
			WHERE label = ? AND status = ? AND heartbeat_at < ?`,
			IngestExpired, IngestStaleReason, now.UnixMilli(), label, IngestRunning, now.Add(-staleAfter).UnixMilli()); err != nil {
			return err
		}
		var running int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kb_ingest_jobs WHERE label = ? AND status = ?`,
			label, IngestRunning).Scan(&running); err != nil {
			return err
		}
		if running > 0 {
			return ErrIngestRunning
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO kb_ingest_jobs (job_id, label, triggered_by, status, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?)`, id, label, by, IngestRunning, now.UnixMilli(), now.UnixMilli())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("acquire ingest %q: %w", label, err)
	}
	return id, nil
}

// HeartbeatIngest records that the running job is alive. It returns an
// error matching ErrNotFound when the job is not running: it finished, or
// another run expired it after its heartbeats stopped, and so lost the lock.
func (s *Store) HeartbeatIngest(ctx context.Context, jobID string) error {
	return s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx, `UPDATE kb_ingest_jobs SET heartbeat_at = ? WHERE job_id = ? AND status = ?`,
			s.now().UnixMilli(), jobID, IngestRunning)
		if err == nil {
			err = requireRow(res)
		}
		if err != nil {
			return fmt.Errorf("heartbeat ingest %s: %w", jobID, err)
		}
		return nil
	})
}

// FinishIngest ends the running job with status completed or failed and a
// reason, releasing the lock. It returns an error matching ErrNotFound when
// the job is not running (already finished or expired).
func (s *Store) FinishIngest(ctx context.Context, jobID, status, reason string) error {
	if status != IngestCompleted && status != IngestFailed {
		return fmt.Errorf("finish ingest %s: status %q: want %s or %s", jobID, status, IngestCompleted, IngestFailed)
	}
	return s.write(ctx, func(ctx context.Context) error {
		res, err := s.exec(ctx, `UPDATE kb_ingest_jobs SET status = ?, reason = ?, finished_at = ?
			WHERE job_id = ? AND status = ?`, status, reason, s.now().UnixMilli(), jobID, IngestRunning)
		if err == nil {
			err = requireRow(res)
		}
		if err != nil {
			return fmt.Errorf("finish ingest %s: %w", jobID, err)
		}
		return nil
	})
}

// IngestJob returns a job, or an error matching ErrNotFound.
func (s *Store) IngestJob(ctx context.Context, jobID string) (IngestJob, error) {
	var r ingestRow
	err := s.db.NewRaw(`SELECT * FROM kb_ingest_jobs WHERE job_id = ?`, jobID).Scan(ctx, &r)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return IngestJob{}, fmt.Errorf("get ingest job %s: %w", jobID, err)
	}
	return r.job(), nil
}
