package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/schedule"
)

// newSchedule is schedule.New's schedule for when, made at the clock's
// time, or the test fails.
func newSchedule(t testing.TB, c *fake.Clock, creator, when string) schedule.Schedule {
	t.Helper()
	sc, err := schedule.New(schedule.Request{Creator: creator, Channel: "C1", ThreadTS: "1.1", When: when, Prompt: "post the open incidents"}, time.UTC, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestSchedules(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	daily, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "0 9 * * *"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	want := newSchedule(t, c, "U1", "0 9 * * *")
	want.ID = daily.ID
	if daily != want {
		t.Fatalf("stored\n%+v\nwant\n%+v", daily, want)
	}
	hourly, err := s.CreateSchedule(ctx, newSchedule(t, c, "U2", "@hourly"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.Schedules(ctx)
	if err != nil || len(list) != 2 || list[0].ID != hourly.ID || list[1].ID != daily.ID {
		t.Fatalf("Schedules = %+v, %v; want the hourly one first (soonest)", list, err)
	}
	if at, ok, err := s.NextScheduleDue(ctx); err != nil || !ok || !at.Equal(hourly.NextRunAt) {
		t.Fatalf("NextScheduleDue = %v, %v, %v; want %v", at, ok, err, hourly.NextRunAt)
	}

	// Pausing takes a schedule off the timer, not off the list.
	if err := s.SetSchedulePaused(ctx, hourly.ID, true); err != nil {
		t.Fatal(err)
	}
	if at, _, _ := s.NextScheduleDue(ctx); !at.Equal(daily.NextRunAt) {
		t.Fatalf("NextScheduleDue with the hourly one paused = %v, want %v", at, daily.NextRunAt)
	}
	if due, _ := s.DueSchedules(ctx, daily.NextRunAt.Add(time.Hour), 10); len(due) != 1 || due[0].ID != daily.ID {
		t.Fatalf("DueSchedules = %+v: a paused schedule is never due", due)
	}
	if won, err := s.ClaimSchedule(ctx, schedule.Claim{ID: hourly.ID, Due: hourly.NextRunAt, Next: hourly.NextRunAt.Add(time.Hour)}); err != nil || won {
		t.Fatalf("claimed a paused schedule: %v, %v", won, err)
	}
	if err := s.SetSchedulePaused(ctx, hourly.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSchedulePaused(ctx, "sabsent22", true); !errors.Is(err, ErrNotFound) || !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("pausing an unknown id: %v", err)
	}
	if err := s.PauseSchedule(ctx, "sabsent22"); err != nil {
		t.Fatalf("the scheduler's pause of a schedule gone: %v", err)
	}

	// A creator who loses their role: their schedules pause, returned
	// so the manager can be told in each thread.
	paused, err := s.PauseSchedulesOf(ctx, "U1")
	if err != nil || len(paused) != 1 || paused[0].ID != daily.ID || !paused[0].Paused {
		t.Fatalf("PauseSchedulesOf = %+v, %v", paused, err)
	}
	if got, _ := s.Schedule(ctx, daily.ID); !got.Paused {
		t.Fatal("not paused in the store")
	}
	if again, err := s.PauseSchedulesOf(ctx, "U1"); err != nil || len(again) != 0 {
		t.Fatalf("pausing again: %+v, %v", again, err)
	}

	// Resumed by someone who may schedule work: theirs from now on, its
	// next run where the caller planned it, back on the timer.
	next := daily.NextRunAt.Add(48 * time.Hour)
	if resumed, err := s.ResumeSchedule(ctx, daily.ID, "U2", next); err != nil || !resumed {
		t.Fatalf("ResumeSchedule = %v, %v", resumed, err)
	}
	if got, _ := s.Schedule(ctx, daily.ID); got.Paused || got.Creator != "U2" || !got.NextRunAt.Equal(next) {
		t.Fatalf("resumed: %+v", got)
	}
	if due, _ := s.DueSchedules(ctx, next, 10); !slices.ContainsFunc(due, func(sc schedule.Schedule) bool { return sc.ID == daily.ID }) {
		t.Fatalf("a resumed schedule is not due at its next run: %+v", due)
	}
	if resumed, err := s.ResumeSchedule(ctx, daily.ID, "U3", next); err != nil || resumed {
		t.Fatalf("resuming one not paused = %v, %v; want false, nothing changed", resumed, err)
	}
	if got, _ := s.Schedule(ctx, daily.ID); got.Creator != "U2" {
		t.Fatalf("a refused resume changed the creator: %+v", got)
	}
	if _, err := s.ResumeSchedule(ctx, "sabsent22", "U2", next); !errors.Is(err, ErrNotFound) || !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("resuming an unknown id: %v", err)
	}

	if err := s.RemoveSchedule(ctx, daily.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveSchedule(ctx, daily.ID); !errors.Is(err, ErrNotFound) || !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("removing twice: %v", err)
	}
	if _, err := s.Schedule(ctx, daily.ID); !errors.Is(err, ErrNotFound) || !errors.Is(err, schedule.ErrNotFound) {
		t.Fatalf("a removed schedule: %v", err)
	}
}

// A claim moves the next run on and records the run; a one-off's claim
// removes it; a claim of a due time already moved on loses.
func TestClaimSchedule(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	sc, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "@hourly"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	due, next := sc.NextRunAt, sc.NextRunAt.Add(time.Hour)
	if won, err := s.ClaimSchedule(ctx, schedule.Claim{ID: sc.ID, Due: due, Next: next, Ran: due, Missed: 2}); err != nil || !won {
		t.Fatalf("claim: %v, %v", won, err)
	}
	if won, err := s.ClaimSchedule(ctx, schedule.Claim{ID: sc.ID, Due: due, Next: next, Ran: due}); err != nil || won {
		t.Fatalf("the same due time claimed twice: %v, %v", won, err)
	}
	got, _ := s.Schedule(ctx, sc.ID)
	if !got.NextRunAt.Equal(next) || !got.LastRunAt.Equal(due) || got.Missed != 2 {
		t.Fatalf("after the claim: next %v last %v missed %d", got.NextRunAt, got.LastRunAt, got.Missed)
	}
	// A skipped run (busy) moves on and keeps the last run.
	if won, _ := s.ClaimSchedule(ctx, schedule.Claim{ID: sc.ID, Due: next, Next: next.Add(time.Hour)}); !won {
		t.Fatal("skip claim lost")
	}
	if got, _ := s.Schedule(ctx, sc.ID); !got.LastRunAt.Equal(due) || got.Missed != 2 {
		t.Fatalf("a skipped run changed the last run to %v (missed %d)", got.LastRunAt, got.Missed)
	}

	once, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "in 3s"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	if won, err := s.ClaimSchedule(ctx, schedule.Claim{ID: once.ID, Due: once.NextRunAt, Ran: once.NextRunAt}); err != nil || !won {
		t.Fatalf("claim a one-off: %v, %v", won, err)
	}
	if _, err := s.Schedule(ctx, once.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a one-off that ran is kept: %v", err)
	}
}

// A claim that carries its run's inbox record writes it in the same
// transaction: the record is there exactly when the claim won, so a crash
// after the claim leaves the run to the inbox (resumed or told), and a
// lost claim records nothing.
func TestClaimScheduleRecordsTheRun(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	unfinished := func() []string {
		t.Helper()
		es, err := s.InboxUnfinished(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range es {
			ids = append(ids, e.EventID+" "+e.State)
		}
		return ids
	}
	rec := func(id string) *InboxEntry {
		return &InboxEntry{EventID: id, Kind: "schedule", ChannelID: "D1", ThreadTS: "1.1", UserID: "U1",
			Event: []byte(`{"id":"` + id + `"}`)}
	}
	for _, when := range []string{"@hourly", "in 3s"} { // a recurring run, a one-off
		sc, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", when), schedule.DefaultMax)
		if err != nil {
			t.Fatal(err)
		}
		var next time.Time
		if when == "@hourly" {
			next = sc.NextRunAt.Add(time.Hour)
		}
		id := schedule.RunID(sc.ID, sc.NextRunAt)
		claim := schedule.Claim{ID: sc.ID, Due: sc.NextRunAt, Next: next, Ran: sc.NextRunAt, Record: rec(id)}
		if won, err := s.ClaimSchedule(ctx, claim); err != nil || !won {
			t.Fatalf("%s: claim: %v, %v", when, won, err)
		}
		if got := unfinished(); !slices.Contains(got, id+" "+InboxReceived) {
			t.Fatalf("%s: after the claim the inbox holds %q, want %s received", when, got, id)
		}
		// The same due time claimed again (another replica, late) loses
		// and records nothing more.
		claim.Record = rec(id + "-again")
		if won, err := s.ClaimSchedule(ctx, claim); err != nil || won {
			t.Fatalf("%s: the same due time claimed twice: %v, %v", when, won, err)
		}
		if got := unfinished(); slices.Contains(got, id+"-again "+InboxReceived) {
			t.Fatalf("%s: a lost claim recorded its run: %q", when, got)
		}
	}
}

// A received event moves to another thread with its new copy; one that
// already runs is left where it is.
func TestInboxRethread(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	if _, err := s.InboxReceive(ctx, InboxEntry{EventID: "sched:a:1", Kind: "schedule", ChannelID: "C1", ThreadTS: "1.1",
		UserID: "U1", Event: []byte(`{"thread_ts":"1.1"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.InboxRethread(ctx, "sched:a:1", "2.2", []byte(`{"thread_ts":"2.2"}`)); err != nil {
		t.Fatal(err)
	}
	es, err := s.InboxUnfinished(ctx)
	if err != nil || len(es) != 1 || es[0].ThreadTS != "2.2" || string(es[0].Event) != `{"thread_ts":"2.2"}` {
		t.Fatalf("after the move: %+v, %v", es, err)
	}
	if _, err := s.InboxStart(ctx, "sched:a:1", "trace"); err != nil {
		t.Fatal(err)
	}
	if err := s.InboxRethread(ctx, "sched:a:1", "3.3", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if es, _ := s.InboxUnfinished(ctx); len(es) != 1 || es[0].ThreadTS != "2.2" {
		t.Fatalf("a running event was moved: %+v", es)
	}
	if err := s.InboxRethread(ctx, "sched:a:1", "3.3", []byte(`not json`)); err == nil {
		t.Fatal("a copy that is not JSON was taken")
	}
}

// At most max schedules per persona, counted in the creating transaction:
// concurrent creators do not overshoot.
func TestScheduleLimit(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	const max = 5
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "@daily"), max)
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	refused := 0
	for err := range errs {
		if !errors.Is(err, schedule.ErrLimit) || !errors.Is(err, schedule.ErrInvalid) {
			t.Fatalf("unexpected error: %v", err)
		}
		refused++
	}
	list, _ := s.Schedules(ctx)
	if len(list) != max || refused != 3 {
		t.Fatalf("%d stored, %d refused; want %d and 3", len(list), refused, max)
	}
	_, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "@daily"), max)
	if want := "create schedule: too many cron jobs: at most 5 per persona (AGENT_MAX_SCHEDULES); remove one first"; err == nil || err.Error() != want {
		t.Fatalf("past the limit: %v\nwant %s", err, want)
	}
}

// A taken id is never overwritten: the schedule gets a fresh one.
func TestScheduleIDTaken(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	a, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "@daily"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	dup := newSchedule(t, c, "U2", "@hourly")
	dup.ID = a.ID
	b, err := s.CreateSchedule(ctx, dup, schedule.DefaultMax)
	if err != nil || b.ID == a.ID || !schedule.ValidID(b.ID) || b.Creator != "U2" {
		t.Fatalf("second schedule with a taken id: %+v, %v", b, err)
	}
	if got, _ := s.Schedule(ctx, a.ID); got.Creator != "U1" {
		t.Fatalf("the first was overwritten: %+v", got)
	}
}

// Claim once under concurrent claimers: 8 claimers (on two handles of the
// database, as two replicas) race over 50 due times of one schedule; each
// due time is won exactly once.
func TestClaimScheduleConcurrent(t *testing.T) {
	path := testPath(t)
	c := newClock()
	a, b := openAt(t, path, c), openAt(t, path, c)
	ctx := t.Context()
	sc, err := a.CreateSchedule(ctx, newSchedule(t, c, "U1", "* * * * *"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	const dues = 50
	first := sc.NextRunAt
	last := first.Add((dues - 1) * time.Minute)
	var mu sync.Mutex
	won := map[time.Time]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		st := []*Store{a, b}[i%2]
		wg.Go(func() {
			for {
				due, err := st.DueSchedules(ctx, last, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if len(due) == 0 {
					return
				}
				d := due[0].NextRunAt
				ok, err := st.ClaimSchedule(ctx, schedule.Claim{ID: sc.ID, Due: d, Next: d.Add(time.Minute), Ran: d})
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					won[d]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(won) != dues {
		t.Fatalf("%d due times won, want %d", len(won), dues)
	}
	for d, n := range won {
		if n != 1 {
			t.Errorf("due %v won %d times", d, n)
		}
	}
	if got, _ := a.Schedule(ctx, sc.ID); !got.NextRunAt.Equal(last.Add(time.Minute)) || !got.LastRunAt.Equal(last) {
		t.Errorf("after the race: next %v last %v", got.NextRunAt, got.LastRunAt)
	}
}

// runner hands the scheduler's runs to the test.
type runner struct{ runs chan schedule.Run }

func (r runner) Busy(context.Context, string) bool { return false }
func (r runner) Run(_ context.Context, run schedule.Run) error {
	r.runs <- run
	return nil
}

// startScheduler runs a scheduler on st until the returned stop.
func startScheduler(t *testing.T, st *Store, c *fake.Clock, r runner) (stop func()) {
	t.Helper()
	sch, err := schedule.NewScheduler(schedule.Deps{Store: st, Runner: r, Clock: c, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sch.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("scheduler: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func receive(t *testing.T, runs chan schedule.Run) schedule.Run {
	t.Helper()
	select {
	case r := <-runs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no run")
		return schedule.Run{}
	}
}

// Catch-up after a restart, on the store: of the due times missed while
// no scheduler ran, the latest (within AGENT_SCHEDULE_CATCHUP) runs once
// at start and the older are recorded as missed; one missed by more than
// the window is only recorded.
func TestScheduleCatchUpAfterRestart(t *testing.T) {
	s, c := newTestStore(t) // 09:30
	ctx := t.Context()
	hourly, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "0 * * * *"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	daily, err := s.CreateSchedule(ctx, newSchedule(t, c, "U1", "0 10 * * *"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	c.Set(time.Date(2025, 11, 22, 13, 20, 0, 0, time.UTC)) // down from 09:30 to 13:20
	r := runner{runs: make(chan schedule.Run, 10)}
	stop := startScheduler(t, s, c, r)
	run := receive(t, r.runs)
	if run.Schedule.ID != hourly.ID || !run.Due.Equal(time.Date(2025, 11, 22, 13, 0, 0, 0, time.UTC)) {
		t.Fatalf("caught up %s at %v; want the hourly one's 13:00", run.Schedule.ID, run.Due)
	}
	if !fake.Eventually(10*time.Second, func() bool {
		got, err := s.Schedule(ctx, daily.ID)
		return err == nil && got.Missed == 1
	}) {
		t.Fatal("the daily run missed by 3h20m was not recorded")
	}
	stop() // every pass over: nothing else ran
	if len(r.runs) != 0 {
		t.Fatalf("%d more runs", len(r.runs))
	}
	got, _ := s.Schedule(ctx, hourly.ID)
	if got.Missed != 3 || !got.LastRunAt.Equal(run.Due) || !got.NextRunAt.Equal(run.Due.Add(time.Hour)) {
		t.Errorf("hourly: missed %d last %v next %v; want 10:00, 11:00, 12:00 missed and 13:00 run", got.Missed, got.LastRunAt, got.NextRunAt)
	}
	if got, _ := s.Schedule(ctx, daily.ID); !got.LastRunAt.IsZero() || !got.NextRunAt.Equal(time.Date(2025, 11, 23, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("daily: last %v next %v", got.LastRunAt, got.NextRunAt)
	}
}

// Two schedulers (replicas) on one database, one clock: each of 50 due
// times runs once.
func TestSchedulerReplicasOnStore(t *testing.T) {
	path := testPath(t)
	c := newClock()
	a, b := openAt(t, path, c), openAt(t, path, c)
	ctx := t.Context()
	sc, err := a.CreateSchedule(ctx, newSchedule(t, c, "U1", "* * * * *"), schedule.DefaultMax)
	if err != nil {
		t.Fatal(err)
	}
	r := runner{runs: make(chan schedule.Run, 200)}
	stopA, stopB := startScheduler(t, a, c, r), startScheduler(t, b, c, r)
	seen := map[time.Time]bool{}
	for i := range 50 {
		due := sc.NextRunAt.Add(time.Duration(i) * time.Minute)
		var got schedule.Run
		// Set again until the run comes: a scheduler still reading when
		// the clock moved arms its timer after, and sees the time then.
		if !fake.Eventually(10*time.Second, func() bool {
			c.Set(due)
			select {
			case got = <-r.runs:
				return true
			default:
				return false
			}
		}) {
			t.Fatalf("due time %d did not run", i)
		}
		if seen[got.Due] {
			t.Fatalf("due %v ran twice", got.Due)
		}
		seen[got.Due] = true
	}
	stopA()
	stopB()
	for len(r.runs) > 0 {
		if got := <-r.runs; seen[got.Due] {
			t.Fatalf("due %v ran twice", got.Due)
		}
	}
	if len(seen) != 50 {
		t.Fatalf("%d due times ran", len(seen))
	}
}

// TestScheduleRunUnfinished: a run of the schedule is unfinished while its
// event is received, running or answering, on any replica; a settled run,
// a run of another schedule (one whose id the first's starts, or differs
// from in case only) and an event that only looks like a run do not count.
func TestScheduleRunUnfinished(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	due := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	receive := func(id string) {
		t.Helper()
		if _, err := s.InboxReceive(ctx, InboxEntry{EventID: id, Kind: "schedule", ChannelID: "C1", Event: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	unfinished := func(id string) bool {
		t.Helper()
		busy, err := s.ScheduleRunUnfinished(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return busy
	}
	receive(schedule.RunID("s10", due))
	receive(schedule.RunID("S1", due))
	receive("x" + schedule.RunID("s1", due))
	receive("sched:s1") // no separator: not a run of s1
	if unfinished("s1") {
		t.Fatal("runs of s10 and S1, and look-alike events, count as s1's")
	}
	run := schedule.RunID("s1", due)
	receive(run)
	if !unfinished("s1") {
		t.Fatal("a received run is not unfinished")
	}
	if _, err := s.InboxStart(ctx, run, "trace"); err != nil {
		t.Fatal(err)
	}
	if err := s.InboxAnswering(ctx, run); err != nil {
		t.Fatal(err)
	}
	if !unfinished("s1") {
		t.Fatal("an answering run is not unfinished")
	}
	if err := s.InboxFinish(ctx, run, InboxAnswered, ""); err != nil {
		t.Fatal(err)
	}
	if unfinished("s1") {
		t.Fatal("an answered run is still unfinished")
	}
	if !unfinished("s10") || !unfinished("S1") {
		t.Fatal("the other schedules' runs were lost")
	}
}
