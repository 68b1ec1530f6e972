package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Scheduled work in the simulator: the scheduler runs on the simulation's
// clock, which moves only when a step says (Advance). A run it starts is
// pending like an injected event, so that a step settles once the runs it
// set going were handled.

// onScheduleRun remembers a scheduled run as pending, before it is
// delivered.
func (s *Sim) onScheduleRun(ev *pipeline.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[ev.ID] = true
}

// onSchedulerIdle records that the scheduler went to sleep until until.
func (s *Sim) onSchedulerIdle(until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idleSeq++
	s.idleUntil = until
	close(s.progress)
	s.progress = make(chan struct{})
}

// schedulerCaughtUp waits for the scheduler to go to sleep after seq with
// nothing due: every run due by the clock's time has been handed over.
func (s *Sim) schedulerCaughtUp(ctx context.Context, seq int) error {
	return s.wait(ctx, "the scheduler did not catch up", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.idleSeq > seq && (s.idleUntil.IsZero() || s.idleUntil.After(s.clock.Now()))
	})
}

// Now is the simulated clock's time.
func (s *Sim) Now() time.Time { return s.clock.Now() }

// Advance moves the simulated clock d on and settles: the schedules due by
// then run, each handled before it returns.
func (s *Sim) Advance(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	seq := s.idleSeq
	s.mu.Unlock()
	s.clock.Advance(d)
	// Read again after the move, whatever timer was armed: a pass that
	// began before it would not see what came due.
	s.Service().WakeScheduler()
	if err := s.schedulerCaughtUp(ctx, seq); err != nil {
		return err
	}
	return s.Settle(ctx, Injected{})
}

// Schedule stores a schedule of req and waits for the scheduler to read
// it.
func (s *Sim) Schedule(ctx context.Context, req schedule.Request) (schedule.Schedule, error) {
	s.mu.Lock()
	seq := s.idleSeq
	s.schedules++
	// A transcript names the schedule: its id is the same on every run.
	id := fmt.Sprintf("ssim%c%c", 'a'+s.schedules/26%26, 'a'+s.schedules%26)
	s.mu.Unlock()
	sc, err := s.Service().AddSchedule(ctx, id+"aaa", req)
	if err != nil {
		return sc, err
	}
	return sc, s.schedulerCaughtUp(ctx, seq)
}
