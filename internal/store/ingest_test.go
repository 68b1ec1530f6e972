package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

func openIngest(t *testing.T) (*Store, *fake.Clock) {
	t.Helper()
	clock := fake.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, err := Open(context.Background(), testPath(t), Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

const stale = 2 * time.Minute

func TestIngestMutex(t *testing.T) {
	ctx := context.Background()
	s, clock := openIngest(t)
	id, err := s.AcquireIngest(ctx, "notes", "U1", stale)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireIngest(ctx, "notes", "U2", stale); !errors.Is(err, ErrIngestRunning) {
		t.Fatalf("second acquire err = %v, want ErrIngestRunning", err)
	}
	if other, err := s.AcquireIngest(ctx, "docs", "U2", stale); err != nil || other == id {
		t.Fatalf("acquire of another label = %q, %v; want its own job", other, err)
	}
	job, err := s.IngestJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	if job.Label != "notes" || job.TriggeredBy != "U1" || job.Status != IngestRunning ||
		!job.StartedAt.Equal(start) || !job.HeartbeatAt.Equal(start) || !job.FinishedAt.IsZero() {
		t.Fatalf("job = %+v", job)
	}
}

func TestIngestHeartbeatKeepsLock(t *testing.T) {
	ctx := context.Background()
	s, clock := openIngest(t)
	id, err := s.AcquireIngest(ctx, "notes", "U1", stale)
	if err != nil {
		t.Fatal(err)
	}
	// Ten minutes in 30 s heartbeats: never stale.
	for i := 0; i < 20; i++ {
		clock.Advance(30 * time.Second)
		if err := s.HeartbeatIngest(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AcquireIngest(ctx, "notes", "U2", stale); !errors.Is(err, ErrIngestRunning) {
			t.Fatalf("acquire after heartbeat %d: err = %v, want ErrIngestRunning", i, err)
		}
	}
	// Exactly staleAfter since the heartbeat is not older than staleAfter.
	clock.Advance(stale)
	if _, err := s.AcquireIngest(ctx, "notes", "U2", stale); !errors.Is(err, ErrIngestRunning) {
		t.Fatalf("acquire at the stale boundary: err = %v, want ErrIngestRunning", err)
	}
	job, _ := s.IngestJob(ctx, id)
	if job.Status != IngestRunning || !job.HeartbeatAt.Equal(clock.Now().Add(-stale)) {
		t.Fatalf("job = %+v", job)
	}
}

func TestIngestStaleHeartbeatExpires(t *testing.T) {
	ctx := context.Background()
	s, clock := openIngest(t)
	crashed, err := s.AcquireIngest(ctx, "notes", "U1", stale)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(stale + time.Millisecond)
	id, err := s.AcquireIngest(ctx, "notes", "U2", stale)
	if err != nil {
		t.Fatalf("acquire over a stale job: %v", err)
	}
	old, _ := s.IngestJob(ctx, crashed)
	if old.Status != IngestExpired || old.Reason != IngestStaleReason || !old.FinishedAt.Equal(clock.Now()) {
		t.Fatalf("stale job = %+v", old)
	}
	// The dead run lost the lock: it can neither heartbeat nor finish.
	if err := s.HeartbeatIngest(ctx, crashed); !errors.Is(err, ErrNotFound) {
		t.Fatalf("heartbeat of expired job: err = %v, want ErrNotFound", err)
	}
	if err := s.FinishIngest(ctx, crashed, IngestCompleted, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("finish of expired job: err = %v, want ErrNotFound", err)
	}
	if job, _ := s.IngestJob(ctx, id); job.Status != IngestRunning || job.TriggeredBy != "U2" {
		t.Fatalf("new job = %+v", job)
	}
}

func TestIngestFinishReleases(t *testing.T) {
	for _, status := range []string{IngestCompleted, IngestFailed} {
		t.Run(status, func(t *testing.T) {
			ctx := context.Background()
			s, clock := openIngest(t)
			id, err := s.AcquireIngest(ctx, "notes", "U1", stale)
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			if err := s.FinishIngest(ctx, id, status, "why"); err != nil {
				t.Fatal(err)
			}
			job, _ := s.IngestJob(ctx, id)
			if job.Status != status || job.Reason != "why" || !job.FinishedAt.Equal(clock.Now()) {
				t.Fatalf("job = %+v", job)
			}
			if err := s.FinishIngest(ctx, id, status, ""); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second finish: err = %v, want ErrNotFound", err)
			}
			if _, err := s.AcquireIngest(ctx, "notes", "U2", stale); err != nil {
				t.Fatalf("acquire after finish: %v", err)
			}
		})
	}
}

func TestIngestErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := openIngest(t)
	if _, err := s.AcquireIngest(ctx, "", "U1", stale); err == nil {
		t.Error("acquire without label succeeded")
	}
	if _, err := s.AcquireIngest(ctx, "notes", "U1", 0); err == nil {
		t.Error("acquire without staleAfter succeeded")
	}
	id, _ := s.AcquireIngest(ctx, "notes", "U1", stale)
	if err := s.FinishIngest(ctx, id, IngestExpired, ""); err == nil {
		t.Error("finish as expired succeeded")
	}
	if _, err := s.IngestJob(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: err = %v, want ErrNotFound", err)
	}
	// The partial unique index holds even for writers that skip AcquireIngest.
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO kb_ingest_jobs (job_id, label, status, started_at, heartbeat_at)
		VALUES ('x', 'notes', 'running', 0, 0)`); err == nil {
		t.Error("a second running row for the label was inserted")
	}
}

func TestIngestConcurrentAcquireOneWins(t *testing.T) {
	ctx := context.Background()
	s, _ := openIngest(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, busy := 0, 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.AcquireIngest(ctx, "notes", "U", stale)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, ErrIngestRunning):
				busy++
			default:
				t.Errorf("acquire: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || busy != 15 {
		t.Fatalf("wins = %d, busy = %d; want 1 and 15", wins, busy)
	}
}
