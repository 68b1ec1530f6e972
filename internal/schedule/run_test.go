package schedule

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The run side's policy, on fakes of its dependencies: no service, no
// database, no platform.

// runStore is a RunStore in memory.
type runStore struct {
	mu         sync.Mutex
	rows       map[string]Schedule
	unfinished map[string]bool // schedule id → a run in the inbox, unsettled
	mutedUser  map[string]bool
	pauses     []string // PauseSchedule's and PauseSchedulesOf's arguments, in order
}

func newRunStore(rows ...Schedule) *runStore {
	s := &runStore{rows: map[string]Schedule{}, unfinished: map[string]bool{}, mutedUser: map[string]bool{}}
	for _, r := range rows {
		s.rows[r.ID] = r
	}
	return s
}

func (s *runStore) Schedule(_ context.Context, id string) (Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.rows[id]
	if !ok {
		return Schedule{}, ErrNotFound
	}
	return sc, nil
}

func (s *runStore) PauseSchedule(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauses = append(s.pauses, "one "+id)
	if sc, ok := s.rows[id]; ok {
		sc.Paused = true
		s.rows[id] = sc
	}
	return nil
}

func (s *runStore) PauseSchedulesOf(_ context.Context, creator string) ([]Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauses = append(s.pauses, "of "+creator)
	var out []Schedule
	for id, sc := range s.rows {
		if sc.Creator == creator && !sc.Paused {
			sc.Paused = true
			s.rows[id] = sc
			out = append(out, sc)
		}
	}
	slices.SortFunc(out, func(a, b Schedule) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *runStore) ScheduleRunUnfinished(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unfinished[id], nil
}

func (s *runStore) Muted(_ context.Context, userID, _, _ string, _ time.Time) (bool, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mutedUser[userID], false, nil
}

// roster is a Roster: a role per person, the rest members.
type roster struct {
	roles      map[string]pipeline.Role
	restricted bool // every channel's layer is restricted
}

func (r roster) Layer(string, bool) pipeline.Layer {
	if r.restricted {
		return pipeline.LayerRestricted
	}
	return pipeline.LayerTrusted
}
func (r roster) IsManager(id string) bool {
	return r.roles[id] == pipeline.RoleManager || r.roles[id] == pipeline.RoleBackup
}
func (r roster) IsBlocked(string) bool          { return false }
func (r roster) DMOpen() bool                   { return true }
func (r roster) RoleOf(id string) pipeline.Role { return cmpRole(r.roles[id]) }
func (r roster) ScopesOf(id string) []string    { return []string{"anything"} }
func cmpRole(r pipeline.Role) pipeline.Role {
	if r == "" {
		return pipeline.RoleMember
	}
	return r
}

// chat records posts; left are the people whose account is gone.
type chat struct {
	mu      sync.Mutex
	posts   []pipeline.Message
	postErr error
	left    map[string]bool
}

func (c *chat) Post(_ context.Context, m pipeline.Message) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.postErr != nil {
		return "", c.postErr
	}
	c.posts = append(c.posts, m)
	return "900.1", nil
}

func (c *chat) UserProfile(_ context.Context, id string) (pipeline.Profile, error) {
	return pipeline.Profile{UserID: id, Deleted: c.left[id]}, nil
}

// inbox records what is re-threaded.
type inbox struct {
	mu        sync.Mutex
	rethreads []string // event id → thread
}

func (i *inbox) Record(ev *pipeline.Event) (any, error) { return "record " + ev.ID, nil }
func (i *inbox) Rethread(_ context.Context, ev *pipeline.Event) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.rethreads = append(i.rethreads, ev.ID+" → "+ev.ThreadTS)
	return nil
}

// runRig is the run side over the fakes: delivered receives each event
// handed to the gateway, notified counts the scheduler's wakes.
type runRig struct {
	runs      *Runs
	store     *runStore
	chat      *chat
	inbox     *inbox
	delivered chan *pipeline.Event
	notified  int
}

const mgr, alice = "U0MGR", "U0ALICE"

func newRunRig(store *runStore, roles map[string]pipeline.Role) *runRig {
	r := &runRig{store: store, chat: &chat{left: map[string]bool{}}, inbox: &inbox{}, delivered: make(chan *pipeline.Event, 10)}
	if roles == nil {
		roles = map[string]pipeline.Role{mgr: pipeline.RoleManager}
	}
	r.runs = NewRuns(RunDeps{Store: store, Roster: roster{roles: roles}, Manager: mgr, Chat: r.chat, Inbox: r.inbox,
		Deliver: func(ev *pipeline.Event) { r.delivered <- ev }, Notify: func() { r.notified++ },
		Self:   func() pipeline.Identity { return pipeline.Identity{TeamID: "T1"} },
		Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2", "[redacted]") },
		Clock:  fake.NewClock(time.Time{})})
	return r
}

func (r *runRig) event(t *testing.T) *pipeline.Event {
	t.Helper()
	select {
	case ev := <-r.delivered:
		return ev
	default:
		t.Fatal("nothing delivered")
		return nil
	}
}

var due = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func stored(id, creator string, target Target) Schedule {
	return Schedule{ID: id, Creator: creator, Channel: "C1", ThreadTS: "100.1", Target: target, When: "@daily", TZ: "UTC",
		Prompt: "post the <!channel> numbers", NextRunAt: due}
}

// A creator who lost the role that let them schedule work: every running
// schedule of theirs is paused, the scheduler woken, and the manager told
// in the thread each was made in, with how to resume or remove it; the
// run does not go on.
func TestRunsCreatorLostRole(t *testing.T) {
	sa, sb := stored("saaaaaaaa", alice, TargetThread), stored("sbbbbbbbb", alice, TargetChannel)
	sb.ThreadTS, sb.Name = "200.1", "weekly <!here>"
	r := newRunRig(newRunStore(sa, sb, stored("sccccccc2", mgr, TargetThread)), nil)
	ev := r.runs.event(Run{Schedule: sa, Due: due})
	ok, err := r.runs.Allow(context.Background(), ev, pipeline.Access{UserID: alice, Role: pipeline.RoleMember})
	if ok || err != nil {
		t.Fatalf("Allow = %v, %v; want the run stopped", ok, err)
	}
	if !slices.Equal(r.store.pauses, []string{"of " + alice}) || r.notified != 1 {
		t.Errorf("pauses %q, notified %d", r.store.pauses, r.notified)
	}
	if m, _ := r.store.Schedule(context.Background(), "sccccccc2"); m.Paused {
		t.Error("the manager's schedule was paused too")
	}
	want := []pipeline.Message{
		{ChannelID: "C1", ThreadTS: "100.1", Text: "<@U0MGR> cron job saaaaaaaa paused: its creator <@U0ALICE> can no longer schedule work. " +
			"`/schedule resume saaaaaaaa` here runs it again as you; `/unschedule saaaaaaaa` removes it"},
		{ChannelID: "C1", ThreadTS: "200.1", Text: "<@U0MGR> cron job sbbbbbbbb (weekly < !here>) paused: its creator <@U0ALICE> can no longer schedule work. " +
			"`/schedule resume sbbbbbbbb` here runs it again as you; `/unschedule sbbbbbbbb` removes it"},
	}
	if !slices.Equal(r.chat.posts, want) {
		t.Errorf("told:\n%+v\nwant\n%+v", r.chat.posts, want)
	}

	// A one-off that came is gone from the store: its thread is told all
	// the same.
	r = newRunRig(newRunStore(), nil)
	once := stored("sonce2222", alice, TargetThread)
	ok, err = r.runs.Allow(context.Background(), r.runs.event(Run{Schedule: once, Due: due}), pipeline.Access{UserID: alice, Role: pipeline.RoleMember})
	if ok || err != nil || len(r.chat.posts) != 1 || !strings.Contains(r.chat.posts[0].Text, "cron job sonce2222 paused") || r.chat.posts[0].ThreadTS != "100.1" {
		t.Errorf("a gone one-off: %v, %v, told %+v", ok, err, r.chat.posts)
	}

	// A creator who left the workspace is stopped as one who lost the role.
	r = newRunRig(newRunStore(stored("saaaaaaaa", mgr, TargetThread)), nil)
	r.chat.left[mgr] = true
	ok, _ = r.runs.Allow(context.Background(), r.runs.event(Run{Schedule: stored("saaaaaaaa", mgr, TargetThread), Due: due}),
		pipeline.Access{UserID: mgr, Role: pipeline.RoleManager})
	if ok || len(r.chat.posts) != 1 {
		t.Errorf("a creator who left: Allow %v, told %+v", ok, r.chat.posts)
	}
}

// A creator who may still schedule work but can no longer be heard where
// it runs (muted, or the channel's layer no longer admits them) has that
// schedule alone paused, and the manager told why.
func TestRunsCreatorUnheard(t *testing.T) {
	sa := stored("saaaaaaaa", alice, TargetThread)
	approver := map[string]pipeline.Role{mgr: pipeline.RoleManager, alice: pipeline.RoleApprover}
	r := newRunRig(newRunStore(sa, stored("sbbbbbbbb", alice, TargetThread)), approver)
	a := pipeline.Access{UserID: alice, Role: pipeline.RoleApprover, Scopes: []string{"schedule"}}
	if ok, err := r.runs.Allow(context.Background(), r.runs.event(Run{Schedule: sa, Due: due}), a); !ok || err != nil {
		t.Fatalf("an approver of scope schedule, heard: Allow = %v, %v", ok, err)
	}
	r.store.mutedUser[alice] = true
	if ok, err := r.runs.Allow(context.Background(), r.runs.event(Run{Schedule: sa, Due: due}), a); ok || err != nil {
		t.Fatalf("muted: Allow = %v, %v", ok, err)
	}
	if !slices.Equal(r.store.pauses, []string{"one saaaaaaaa"}) || len(r.chat.posts) != 1 ||
		!strings.Contains(r.chat.posts[0].Text, "paused: its creator <@U0ALICE> is muted (`/unignore <@U0ALICE>` lifts it).") {
		t.Errorf("muted: pauses %q, told %+v", r.store.pauses, r.chat.posts)
	}
}

// A channel target posts its root message in the channel it was made in
// (named by its name or its prompt, mentions broken, redacted), and the
// run answers in that message's thread; its inbox record, written by the
// claim in the thread it was made in, moves there too.
func TestRunsChannelRootPost(t *testing.T) {
	sc := stored("saaaaaaaa", mgr, TargetChannel)
	sc.Prompt = "post the <!channel> numbers, password hunter2"
	r := newRunRig(newRunStore(sc), nil)
	if err := r.runs.Run(context.Background(), Run{Schedule: sc, Due: due, Recorded: true}); err != nil {
		t.Fatal(err)
	}
	want := pipeline.Message{ChannelID: "C1", Text: "Scheduled: post the < !channel> numbers, password [redacted]"}
	if len(r.chat.posts) != 1 || r.chat.posts[0] != want {
		t.Errorf("root post %+v, want %+v", r.chat.posts, want)
	}
	ev := r.event(t)
	id := RunID("saaaaaaaa", due)
	if ev.ID != id || ev.Kind != pipeline.KindSchedule || ev.ThreadTS != "900.1" || ev.Schedule.ThreadTS != "100.1" ||
		ev.UserID != mgr || ev.TeamID != "T1" || !ev.Recorded || ev.Text != sc.Prompt {
		t.Errorf("event %+v", ev)
	}
	if !slices.Equal(r.inbox.rethreads, []string{id + " → 900.1"}) {
		t.Errorf("re-threaded %q", r.inbox.rethreads)
	}
	if rec, err := r.runs.Record(Run{Schedule: sc, Due: due}); rec != "record "+id || err != nil {
		t.Errorf("Record = %v, %v", rec, err)
	}

	// Named: the name is posted, not the prompt.
	sc.Name = "numbers"
	r = newRunRig(newRunStore(sc), nil)
	_ = r.runs.Run(context.Background(), Run{Schedule: sc, Due: due})
	if len(r.chat.posts) != 1 || r.chat.posts[0].Text != "Scheduled: numbers" || len(r.inbox.rethreads) != 0 {
		t.Errorf("named: posts %+v, re-threaded %q (not recorded: nothing to move)", r.chat.posts, r.inbox.rethreads)
	}

	// The post fails: a recorded run answers where it was made; one not
	// recorded fails to start.
	r = newRunRig(newRunStore(sc), nil)
	r.chat.postErr = errors.New("channel_not_found")
	if err := r.runs.Run(context.Background(), Run{Schedule: sc, Due: due, Recorded: true}); err != nil {
		t.Fatal(err)
	}
	if ev := r.event(t); ev.ThreadTS != "100.1" {
		t.Errorf("recorded, post failed: runs in %q, want where it was made", ev.ThreadTS)
	}
	if err := r.runs.Run(context.Background(), Run{Schedule: sc, Due: due}); err == nil || len(r.delivered) != 0 {
		t.Errorf("not recorded, post failed: %v, delivered %d", err, len(r.delivered))
	}

	// A creator who lost the role gets no root post: the gate stops the
	// run in the thread it was made in.
	lost := stored("sbbbbbbbb", alice, TargetChannel)
	r = newRunRig(newRunStore(lost), nil)
	_ = r.runs.Run(context.Background(), Run{Schedule: lost, Due: due})
	if ev := r.event(t); len(r.chat.posts) != 0 || ev.ThreadTS != "100.1" {
		t.Errorf("lost the role: posts %+v, runs in %q", r.chat.posts, ev.ThreadTS)
	}
}

// A run still going makes the next due time skip, counted, never queued:
// here from its delivery to the end of its turn, or anywhere as far as the
// inbox knows. Once handled, the next due time runs.
func TestRunsBusySkipped(t *testing.T) {
	start := fake.ClockStart.Truncate(time.Hour).Add(time.Hour)
	rs := newRunStore()
	r := newRunRig(rs, nil)
	sc := stored("saaaaaaaa", mgr, TargetThread)
	sc.When, sc.NextRunAt, sc.CreatedAt = "0 * * * *", start, fake.ClockStart
	st := newMemStore(sc)
	clk := fake.NewClock(time.Time{})
	counts := &counts{m: map[string]int{}}
	s, err := NewScheduler(Deps{Store: st, Runner: r.runs, Clock: clk, Metrics: counts})
	if err != nil {
		t.Fatal(err)
	}
	sleeps := make(chan time.Time, 100)
	s.waiting = func(until time.Time) { sleeps <- until }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	sleep := func() {
		t.Helper()
		select {
		case <-sleeps:
		case <-time.After(10 * time.Second):
			t.Fatal("the scheduler did not go to sleep")
		}
	}
	sleep()
	clk.Set(start)
	sleep()
	first := r.event(t)
	clk.Set(start.Add(time.Hour)) // the first run's turn still goes
	sleep()
	if len(r.delivered) != 0 || counts.get(OutcomeSkippedBusy) != 1 || counts.get(OutcomeRan) != 1 {
		t.Fatalf("busy here: delivered %d, skipped_busy %d, ran %d", len(r.delivered), counts.get(OutcomeSkippedBusy), counts.get(OutcomeRan))
	}
	r.runs.Handled(first)
	rs.mu.Lock()
	rs.unfinished[sc.ID] = true // another replica's run, unanswered
	rs.mu.Unlock()
	clk.Set(start.Add(2 * time.Hour))
	sleep()
	if len(r.delivered) != 0 || counts.get(OutcomeSkippedBusy) != 2 {
		t.Fatalf("busy elsewhere: delivered %d, skipped_busy %d", len(r.delivered), counts.get(OutcomeSkippedBusy))
	}
	rs.mu.Lock()
	rs.unfinished[sc.ID] = false
	rs.mu.Unlock()
	clk.Set(start.Add(3 * time.Hour))
	sleep()
	if ev := r.event(t); !ev.Schedule.Due.Equal(start.Add(3*time.Hour)) || counts.get(OutcomeRan) != 2 {
		t.Fatalf("after: ran %v, %d counted", ev.Schedule.Due, counts.get(OutcomeRan))
	}
}
