package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/uptrace/bun"
)

// benchSchedules stores n daily schedules, one due each second from the
// clock's time, and returns the store.
func benchSchedules(b *testing.B, n int) *Store {
	b.Helper()
	s, c := newTestStore(b)
	ctx := b.Context()
	now := c.Now()
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for i := range n {
			_, err := s.txExec(ctx, tx, `INSERT INTO schedules (`+scheduleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				fmt.Sprintf("s%08d", i), "U1", "C1", "1.1", "thread", "@daily", "UTC", "p", "",
				now.Add(time.Duration(i)*time.Second).UnixMilli(), 0, 0, false, now.UnixMilli())
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkScheduleClaim: among 10,000 schedules on SQLite, the store's
// part of one due run as the timer does it: read the due schedule, claim
// it (the conditional update), read the next earliest due time.
func BenchmarkScheduleClaim(b *testing.B) {
	s := benchSchedules(b, 10000)
	ctx := b.Context()
	far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		due, err := s.DueSchedules(ctx, far, 1)
		if err != nil || len(due) != 1 {
			b.Fatal(due, err)
		}
		d := due[0].NextRunAt
		won, err := s.ClaimSchedule(ctx, schedule.Claim{ID: due[0].ID, Due: d, Next: d.Add(time.Duration(10000+i) * 24 * time.Hour), Ran: d})
		if err != nil || !won {
			b.Fatal(won, err)
		}
		if _, _, err := s.NextScheduleDue(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScheduleNextDue: the timer's read among 10,000 schedules.
func BenchmarkScheduleNextDue(b *testing.B) {
	s := benchSchedules(b, 10000)
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, ok, err := s.NextScheduleDue(ctx); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
