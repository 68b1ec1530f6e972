package schedule

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// Store is what the scheduler needs of the database (internal/store
// serves it).
type Store interface {
	// NextScheduleDue is the earliest NextRunAt of the schedules not
	// paused; ok is false when there is none.
	NextScheduleDue(ctx context.Context) (at time.Time, ok bool, err error)
	// DueSchedules lists the schedules not paused whose NextRunAt is at
	// or before now, earliest first, at most limit.
	DueSchedules(ctx context.Context, now time.Time, limit int) ([]Schedule, error)
	// ClaimSchedule applies c in one conditional update: only if the
	// schedule is not paused and its NextRunAt still equals c.Due, so
	// that of two claimers (replicas) one wins. won is false when the
	// schedule moved on, was paused or is gone.
	ClaimSchedule(ctx context.Context, c Claim) (won bool, err error)
	// PauseSchedule pauses the schedule id (one that no longer parses);
	// an id that is gone is no error.
	PauseSchedule(ctx context.Context, id string) error
}

// Claim moves a due schedule on.
type Claim struct {
	ID  string
	Due time.Time // the NextRunAt read: the claim's condition
	// Next is the new NextRunAt; the zero time removes the schedule (a
	// one-off that came).
	Next time.Time
	// Ran is the due time that runs, recorded as LastRunAt; zero: none
	// runs (skipped), LastRunAt is kept.
	Ran    time.Time
	Missed int // added to the schedule's Missed
	// Record, when set, is the run's record in the inbox, written in the
	// claim's transaction when the claim wins (and Ran is set): a crash
	// after the claim leaves the run to the inbox, resumed or told. It is
	// the store's own type (*store.InboxEntry, as the Recorder made it),
	// which this package cannot name (the store imports it): the
	// scheduler hands it on unread.
	Record any
}

// Recorder is a Runner that can say beforehand what a run's inbox record
// is, so that the claim writes it (Claim.Record); its Run is then told
// the run is recorded (Run.Recorded). A nil record: the run records
// itself when it starts.
type Recorder interface {
	Record(r Run) (any, error)
}

// Run is a claimed run, handed to the Runner.
type Run struct {
	Schedule Schedule // as read before the claim
	Due      time.Time
	// Recorded: the claim wrote the run's inbox record (Recorder).
	Recorded bool
}

// Runner is what runs a claimed run (Runs: an event into the pipeline).
type Runner interface {
	// Busy reports whether the schedule's previous run is still going;
	// the due run is then skipped, not queued behind it.
	Busy(ctx context.Context, id string) bool
	// Run starts r and returns without waiting for it to finish; an
	// error means it did not start (counted as failed).
	Run(ctx context.Context, r Run) error
}

// Counter is one labelled counter (a prometheus.Counter).
type Counter interface{ Inc() }

// Metrics gives the counter of runs by outcome: OutcomeRan and the rest.
type Metrics interface {
	ScheduleRuns(outcome string) Counter
}

// Outcomes of a due time (agent_schedule_runs_total's label).
const (
	OutcomeRan           = "ran"
	OutcomeSkippedBusy   = "skipped_busy"
	OutcomeSkippedMissed = "skipped_missed"
	OutcomeFailed        = "failed"
)

// Deps are the scheduler's dependencies; Store and Runner are required.
type Deps struct {
	Store  Store
	Runner Runner
	Clock  clock.Clock   // nil: clock.System
	Window time.Duration // AGENT_SCHEDULE_CATCHUP; 0: DefaultCatchUp
	// Metrics counts runs by outcome; nil counts nothing.
	Metrics Metrics
	Logger  *slog.Logger // nil discards
	// Idle, when set, is told each time the timer goes to sleep, with the
	// time it sleeps until (zero: until Notify): every run due before it
	// has been handed to the Runner (the simulator's advance waits on it).
	Idle func(until time.Time)
}

// dueBatch is how many due schedules one read claims: all that are due at
// once in practice; more wait for the next read, not for the next timer.
const dueBatch = 100

// retryAfter is how long the scheduler waits after a store error before
// it reads again, rather than spinning on a database that is down.
const retryAfter = 5 * time.Second

// Scheduler is the single timer of all schedules: one goroutine (Run)
// sleeping until the earliest due time, woken early by Notify. Idle, it
// holds one armed timer and no goroutine of its own besides Run.
type Scheduler struct {
	d       Deps
	wake    chan struct{} // Notify and the timer; one pending wake is enough
	running atomic.Bool
	// waiting, in tests, is told each time the loop goes to sleep: the
	// time it sleeps until (zero: until Notify).
	waiting func(until time.Time)
}

// NewScheduler checks d and returns a scheduler; Run starts it.
func NewScheduler(d Deps) (*Scheduler, error) {
	if d.Store == nil || d.Runner == nil {
		return nil, errors.New("schedule: a scheduler needs a store and a runner")
	}
	if d.Window < 0 {
		return nil, errors.New("schedule: negative catch-up window")
	}
	if d.Clock == nil {
		d.Clock = clock.System
	}
	if d.Window == 0 {
		d.Window = DefaultCatchUp
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{d: d, wake: make(chan struct{}, 1)}, nil
}

// Notify wakes the scheduler to read the earliest due time again: call it
// after a schedule is created, removed, paused or resumed. It never
// blocks.
func (s *Scheduler) Notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run runs the timer until ctx is done; it returns ctx's error. Due runs
// missed while the service was down are planned by CatchUp at the first
// read.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("schedule: the scheduler runs already")
	}
	defer s.running.Store(false)
	for {
		until, err := s.pass(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			s.d.Logger.ErrorContext(ctx, "schedules: read", "error", err)
			until = s.d.Clock.Now().Add(retryAfter)
		} else if !until.IsZero() && !until.After(s.d.Clock.Now()) {
			continue // more were due than one batch, or came due meanwhile
		}
		if err := s.sleep(ctx, until); err != nil {
			return err
		}
	}
}

// sleep waits for the clock to reach until (zero: forever), a Notify, or
// ctx.
func (s *Scheduler) sleep(ctx context.Context, until time.Time) error {
	var t clock.Timer
	if !until.IsZero() {
		t = s.d.Clock.AfterFunc(until.Sub(s.d.Clock.Now()), s.Notify)
		defer t.Stop()
		if !until.After(s.d.Clock.Now()) {
			// The clock passed until while the timer was being armed: a
			// clock that moves only when told (the simulator's) would
			// fire it at its next move only.
			return nil
		}
	}
	if s.waiting != nil {
		s.waiting(until)
	}
	if s.d.Idle != nil {
		s.d.Idle(until)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.wake:
		return nil
	}
}

// pass runs what is due and returns the earliest due time left (zero:
// none).
func (s *Scheduler) pass(ctx context.Context) (time.Time, error) {
	now := s.d.Clock.Now()
	due, err := s.d.Store.DueSchedules(ctx, now, dueBatch)
	if err != nil {
		return time.Time{}, err
	}
	var errs []error
	for _, sc := range due {
		if err := s.claim(ctx, sc, now); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return time.Time{}, err
	}
	at, ok, err := s.d.Store.NextScheduleDue(ctx)
	if err != nil || !ok {
		return time.Time{}, err
	}
	return at, nil
}

// claim plans one due schedule, claims it and hands its run over.
func (s *Scheduler) claim(ctx context.Context, sc Schedule, now time.Time) error {
	log := s.d.Logger.With("schedule_id", sc.ID)
	spec, err := sc.Spec()
	if err != nil {
		// The row no longer reads: pausing it stops the timer finding it
		// due at every pass, and keeps it for its creator to see.
		log.ErrorContext(ctx, "schedule: paused, it no longer parses", "error", err)
		s.count(OutcomeFailed, 1)
		return s.d.Store.PauseSchedule(ctx, sc.ID)
	}
	p := CatchUp(spec, sc.NextRunAt, now, s.d.Window)
	c := Claim{ID: sc.ID, Due: sc.NextRunAt, Next: p.Next, Ran: p.Run, Missed: p.Missed}
	busy := !p.Run.IsZero() && s.d.Runner.Busy(ctx, sc.ID)
	if busy {
		c.Ran = time.Time{}
	}
	if rec, ok := s.d.Runner.(Recorder); ok && !c.Ran.IsZero() {
		if c.Record, err = rec.Record(Run{Schedule: sc, Due: p.Run}); err != nil {
			// The run records itself when it starts, as without a Recorder.
			log.WarnContext(ctx, "schedule: the run's record could not be made before the claim", "error", err)
			c.Record = nil
		}
	}
	won, err := s.d.Store.ClaimSchedule(ctx, c)
	if err != nil || !won {
		return err // lost to another replica: its run, its counts
	}
	if p.Missed > 0 {
		log.InfoContext(ctx, "schedule: missed runs skipped", "missed", p.Missed, "due", sc.NextRunAt)
		s.count(OutcomeSkippedMissed, p.Missed)
	}
	switch {
	case p.Run.IsZero():
	case busy:
		log.InfoContext(ctx, "schedule: run skipped, the previous one still runs", "due", p.Run)
		s.count(OutcomeSkippedBusy, 1)
	default:
		if err := s.d.Runner.Run(ctx, Run{Schedule: sc, Due: p.Run, Recorded: c.Record != nil}); err != nil {
			log.ErrorContext(ctx, "schedule: run did not start", "due", p.Run, "error", err)
			s.count(OutcomeFailed, 1)
			return nil // claimed: the due time is spent either way
		}
		s.count(OutcomeRan, 1)
	}
	return nil
}

func (s *Scheduler) count(outcome string, n int) {
	if s.d.Metrics == nil {
		return
	}
	c := s.d.Metrics.ScheduleRuns(outcome)
	for range n {
		c.Inc()
	}
}
