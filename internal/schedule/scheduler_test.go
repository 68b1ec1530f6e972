package schedule

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// memStore is a Store in memory: its Claim is conditional like the
// database's.
type memStore struct {
	mu     sync.Mutex
	rows   map[string]Schedule
	claims []Claim
	fail   error // returned by Due while set
}

func newMemStore(rows ...Schedule) *memStore {
	m := &memStore{rows: map[string]Schedule{}}
	for _, r := range rows {
		m.rows[r.ID] = r
	}
	return m
}

func (m *memStore) put(r Schedule) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[r.ID] = r
}

func (m *memStore) get(id string) (Schedule, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	return r, ok
}

func (m *memStore) NextScheduleDue(context.Context) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var at time.Time
	for _, r := range m.rows {
		if !r.Paused && (at.IsZero() || r.NextRunAt.Before(at)) {
			at = r.NextRunAt
		}
	}
	return at, !at.IsZero(), nil
}

func (m *memStore) DueSchedules(_ context.Context, now time.Time, limit int) ([]Schedule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	var out []Schedule
	for _, r := range m.rows {
		if !r.Paused && !r.NextRunAt.After(now) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Schedule) int { return a.NextRunAt.Compare(b.NextRunAt) })
	return out[:min(limit, len(out))], nil
}

func (m *memStore) ClaimSchedule(_ context.Context, c Claim) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[c.ID]
	if !ok || !r.NextRunAt.Equal(c.Due) {
		return false, nil
	}
	m.claims = append(m.claims, c)
	if c.Next.IsZero() {
		delete(m.rows, c.ID)
		return true, nil
	}
	r.NextRunAt = c.Next
	if !c.Ran.IsZero() {
		r.LastRunAt = c.Ran
	}
	r.Missed += c.Missed
	m.rows[c.ID] = r
	return true, nil
}

func (m *memStore) PauseSchedule(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rows[id]
	r.Paused = true
	m.rows[id] = r
	return nil
}

// runner records the runs handed to it.
type runner struct {
	mu   sync.Mutex
	busy map[string]bool
	fail error
	runs chan Run
}

func newRunner() *runner { return &runner{busy: map[string]bool{}, runs: make(chan Run, 1000)} }

func (r *runner) Busy(_ context.Context, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busy[id]
}

func (r *runner) Run(_ context.Context, run Run) error {
	if r.fail != nil {
		return r.fail
	}
	r.runs <- run
	return nil
}

// counts are the scheduler's counters by outcome.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

type countInc struct {
	c       *counts
	outcome string
}

func (i countInc) Inc() {
	i.c.mu.Lock()
	defer i.c.mu.Unlock()
	i.c.m[i.outcome]++
}

func (c *counts) ScheduleRuns(outcome string) Counter { return countInc{c, outcome} }

func (c *counts) get(outcome string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[outcome]
}

// rig is a scheduler on a fake clock with a memStore, running; sleeps
// receives the time each pass sleeps until (zero: until Notify).
type rig struct {
	clock  *fake.Clock
	store  *memStore
	runner *runner
	counts *counts
	sched  *Scheduler
	sleeps chan time.Time
}

func newRig(t *testing.T, store *memStore, window time.Duration) *rig {
	t.Helper()
	r := &rig{clock: fake.NewClock(time.Time{}), store: store, runner: newRunner(), counts: &counts{m: map[string]int{}}, sleeps: make(chan time.Time, 100)}
	r.start(t, window)
	return r
}

func (r *rig) start(t *testing.T, window time.Duration) *Scheduler {
	t.Helper()
	s, err := NewScheduler(Deps{Store: r.store, Runner: r.runner, Clock: r.clock, Window: window, Metrics: r.counts})
	if err != nil {
		t.Fatal(err)
	}
	s.waiting = func(until time.Time) { r.sleeps <- until }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v", err)
		}
	})
	if r.sched == nil {
		r.sched = s
	}
	return s
}

// sleep waits for the scheduler to go to sleep and returns until when.
func (r *rig) sleep(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-r.sleeps:
		return at
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduler did not go to sleep")
		return time.Time{}
	}
}

func (r *rig) run(t *testing.T) Run {
	t.Helper()
	select {
	case run := <-r.runner.runs:
		return run
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
		return Run{}
	}
}

// hourly is a stored hourly schedule created at the fake clock's start.
func hourly(id string, next time.Time) Schedule {
	return Schedule{ID: id, When: "0 * * * *", TZ: "UTC", Prompt: "p", Target: TargetThread, NextRunAt: next, CreatedAt: fake.ClockStart}
}

// The scheduler sleeps until the earliest due time, one timer, and runs
// each due time once.
func TestSchedulerWakesAtEarliest(t *testing.T) {
	start := fake.ClockStart // 03:04:05
	four, five := start.Truncate(time.Hour).Add(time.Hour), start.Truncate(time.Hour).Add(2*time.Hour)
	r := newRig(t, newMemStore(hourly("sb", five), hourly("sa", four)), 0)
	if at := r.sleep(t); !at.Equal(four) {
		t.Fatalf("sleeps until %v, want the earliest %v", at, four)
	}
	if n := r.clock.Timers(); n != 1 {
		t.Fatalf("%d timers armed, want one for all schedules", n)
	}
	r.clock.Set(four.Add(-time.Millisecond)) // the timer has not fired: nothing woke the loop
	if n := r.clock.Timers(); n != 1 || len(r.runner.runs) != 0 {
		t.Fatalf("a millisecond early: %d timers, %d runs", n, len(r.runner.runs))
	}
	r.clock.Set(four)
	if run := r.run(t); run.Schedule.ID != "sa" || !run.Due.Equal(four) {
		t.Fatalf("run %s at %v, want sa at %v", run.Schedule.ID, run.Due, four)
	}
	if at := r.sleep(t); !at.Equal(five) {
		t.Fatalf("then sleeps until %v, want %v (sa's next and sb's)", at, five)
	}
	r.clock.Set(five)
	got := []string{r.run(t).Schedule.ID, r.run(t).Schedule.ID}
	slices.Sort(got)
	if !slices.Equal(got, []string{"sa", "sb"}) {
		t.Fatalf("runs at %v: %v", five, got)
	}
	r.sleep(t)
	if len(r.runner.runs) != 0 || r.counts.get(OutcomeRan) != 3 {
		t.Fatalf("%d runs more, %d counted ran; want each due time once", len(r.runner.runs), r.counts.get(OutcomeRan))
	}
	if sa, _ := r.store.get("sa"); !sa.LastRunAt.Equal(five) || !sa.NextRunAt.Equal(five.Add(time.Hour)) {
		t.Errorf("sa: last %v next %v", sa.LastRunAt, sa.NextRunAt)
	}
}

// Notify wakes the sleeping scheduler to read the earliest due time again.
func TestSchedulerNotify(t *testing.T) {
	r := newRig(t, newMemStore(), 0)
	if at := r.sleep(t); !at.IsZero() || r.clock.Timers() != 0 {
		t.Fatalf("no schedules: sleeps until %v with %d timers, want until Notify and none", at, r.clock.Timers())
	}
	later := r.clock.Now().Add(time.Hour).Truncate(time.Hour)
	r.store.put(hourly("sa", later.Add(time.Hour)))
	r.sched.Notify()
	if at := r.sleep(t); !at.Equal(later.Add(time.Hour)) {
		t.Fatalf("after Notify sleeps until %v", at)
	}
	r.store.put(hourly("sb", later))
	r.sched.Notify()
	if at := r.sleep(t); !at.Equal(later) {
		t.Fatalf("an earlier schedule: sleeps until %v, want %v", at, later)
	}
	if n := r.clock.Timers(); n != 1 {
		t.Fatalf("%d timers armed after two wakes, want 1", n)
	}
	r.clock.Set(later)
	if run := r.run(t); run.Schedule.ID != "sb" {
		t.Fatalf("ran %s", run.Schedule.ID)
	}
}

// Two schedulers (two replicas) on one store run each due time once.
func TestSchedulerTwoReplicas(t *testing.T) {
	first := fake.ClockStart.Truncate(time.Hour).Add(time.Hour)
	r := newRig(t, newMemStore(hourly("sa", first)), 0)
	r.start(t, 0)
	r.sleep(t)
	r.sleep(t)
	for i := range 50 {
		r.clock.Set(first.Add(time.Duration(i) * time.Hour))
		if run := r.run(t); !run.Due.Equal(first.Add(time.Duration(i) * time.Hour)) {
			t.Fatalf("run %d due %v", i, run.Due)
		}
		r.sleep(t) // both passes over: both asleep again
		r.sleep(t)
	}
	if n := len(r.runner.runs); n != 0 {
		t.Fatalf("%d due times ran twice", n)
	}
	if n := r.counts.get(OutcomeRan); n != 50 {
		t.Fatalf("%d runs counted, want 50", n)
	}
}

// A run whose previous run still goes is skipped and counted, never
// queued: the schedule moves on, its last run stays.
func TestSchedulerBusy(t *testing.T) {
	due := fake.ClockStart.Truncate(time.Hour).Add(time.Hour)
	st := newMemStore(hourly("sa", due))
	r := newRig(t, st, 0)
	r.runner.busy["sa"] = true
	r.sleep(t)
	r.clock.Set(due)
	if at := r.sleep(t); !at.Equal(due.Add(time.Hour)) {
		t.Fatalf("sleeps until %v", at)
	}
	sa, _ := st.get("sa")
	if len(r.runner.runs) != 0 || r.counts.get(OutcomeSkippedBusy) != 1 || !sa.LastRunAt.IsZero() || !sa.NextRunAt.Equal(due.Add(time.Hour)) {
		t.Fatalf("busy: %d runs, %d skipped_busy, last %v, next %v", len(r.runner.runs), r.counts.get(OutcomeSkippedBusy), sa.LastRunAt, sa.NextRunAt)
	}
	r.runner.mu.Lock()
	r.runner.busy["sa"] = false
	r.runner.mu.Unlock()
	r.clock.Set(due.Add(time.Hour))
	if run := r.run(t); !run.Due.Equal(due.Add(time.Hour)) {
		t.Fatalf("the next due time ran at %v", run.Due)
	}
}

// At start, a schedule missed while down runs its latest due time once
// if within the window; the older are skipped and counted; a one-off past
// the window is dropped.
func TestSchedulerCatchUp(t *testing.T) {
	now := fake.ClockStart // 03:04:05
	st := newMemStore(
		hourly("sa", now.Truncate(time.Hour).Add(-3*time.Hour)), // 00:00, 01:00, 02:00, 03:00 missed
		Schedule{ID: "sb", When: "2026-01-01T00:00:00Z", TZ: "UTC", Prompt: "p", NextRunAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), CreatedAt: now.Add(-72 * time.Hour)},
	)
	r := newRig(t, st, time.Hour)
	if run := r.run(t); run.Schedule.ID != "sa" || !run.Due.Equal(now.Truncate(time.Hour)) {
		t.Fatalf("caught up %s at %v, want sa's latest %v", run.Schedule.ID, run.Due, now.Truncate(time.Hour))
	}
	r.sleep(t)
	sa, _ := st.get("sa")
	if sa.Missed != 3 || !sa.LastRunAt.Equal(now.Truncate(time.Hour)) || r.counts.get(OutcomeSkippedMissed) != 4 || r.counts.get(OutcomeRan) != 1 {
		t.Fatalf("sa missed %d last %v; counted skipped_missed %d ran %d", sa.Missed, sa.LastRunAt, r.counts.get(OutcomeSkippedMissed), r.counts.get(OutcomeRan))
	}
	if _, ok := st.get("sb"); ok || len(r.runner.runs) != 0 {
		t.Fatalf("the stale one-off: kept %v, runs %d", ok, len(r.runner.runs))
	}
}

// A run the runner cannot start, and a stored schedule that no longer
// parses, count as failed; the latter is paused so it is not found due
// at every pass; a store error waits before the next read.
func TestSchedulerFailures(t *testing.T) {
	due := fake.ClockStart.Truncate(time.Hour).Add(time.Hour)
	broken := hourly("sz", due)
	broken.TZ = "Mars/Olympus"
	st := newMemStore(hourly("sa", due), broken)
	r := newRig(t, st, 0)
	r.runner.fail = errors.New("inbox: disk full")
	r.sleep(t)
	r.clock.Set(due)
	r.sleep(t)
	if sz, _ := st.get("sz"); !sz.Paused || r.counts.get(OutcomeFailed) != 2 {
		t.Fatalf("broken schedule paused %v; failed counted %d, want 2", sz.Paused, r.counts.get(OutcomeFailed))
	}
	if sa, _ := st.get("sa"); !sa.NextRunAt.Equal(due.Add(time.Hour)) {
		t.Fatalf("a run that failed to start still spends its due time: next %v", sa.NextRunAt)
	}
	st.mu.Lock()
	st.fail = errors.New("database is locked")
	st.mu.Unlock()
	r.sched.Notify()
	if at := r.sleep(t); !at.Equal(due.Add(retryAfter)) {
		t.Fatalf("after a store error sleeps until %v, want %v", at, due.Add(retryAfter))
	}
}

// recordingRunner is a runner that says its runs' inbox records
// beforehand (a Recorder).
type recordingRunner struct{ *runner }

func (r recordingRunner) Record(run Run) (any, error) {
	return RunID(run.Schedule.ID, run.Due), nil // the store's own type in production
}

// A Recorder's run record goes with the claim (the store writes both in
// one transaction), and its run is told it is recorded; a skipped due time
// carries no record.
func TestSchedulerClaimCarriesTheRecord(t *testing.T) {
	start := fake.ClockStart
	four := start.Truncate(time.Hour).Add(time.Hour)
	store := newMemStore(hourly("sa", four))
	r := &rig{clock: fake.NewClock(time.Time{}), store: store, runner: newRunner(), counts: &counts{m: map[string]int{}},
		sleeps: make(chan time.Time, 100)}
	s, err := NewScheduler(Deps{Store: store, Runner: recordingRunner{r.runner}, Clock: r.clock, Metrics: r.counts})
	if err != nil {
		t.Fatal(err)
	}
	s.waiting = func(until time.Time) { r.sleeps <- until }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	r.sleep(t)
	r.clock.Set(four)
	run := r.run(t)
	if !run.Recorded {
		t.Fatal("the run of a recorded claim is not told it is recorded")
	}
	r.sleep(t)
	store.mu.Lock()
	claims := slices.Clone(store.claims)
	store.mu.Unlock()
	if len(claims) != 1 || claims[0].Record != RunID("sa", four) {
		t.Fatalf("claims = %+v, want one carrying the run's record", claims)
	}
	// Busy: the due time is skipped, and the claim records nothing.
	r.runner.mu.Lock()
	r.runner.busy["sa"] = true
	r.runner.mu.Unlock()
	r.clock.Set(four.Add(time.Hour))
	r.sleep(t)
	store.mu.Lock()
	defer store.mu.Unlock()
	if last := store.claims[len(store.claims)-1]; last.Record != nil || !last.Ran.IsZero() {
		t.Fatalf("a skipped due time's claim = %+v, want no record", last)
	}
}
