package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The run side of scheduled work: the scheduler claims a due run and
// hands it to Runs; a run becomes a KindSchedule event that the gateway
// records in the inbox (under RunID, the same id on every replica) and
// runs through the same chain as a message, with its creator's authority
// (Allow, the agent stage's gate after the auth stage).

// RunStore is what a run needs of the database (*store.Store).
type RunStore interface {
	// Schedule is the schedule id, or an error matching ErrNotFound.
	Schedule(ctx context.Context, id string) (Schedule, error)
	// PauseSchedule pauses the schedule id; one that is gone is no error.
	PauseSchedule(ctx context.Context, id string) error
	// PauseSchedulesOf pauses every running schedule of creator and
	// returns them.
	PauseSchedulesOf(ctx context.Context, creator string) ([]Schedule, error)
	// ScheduleRunUnfinished reports whether a run of schedule id is in the
	// inbox and not settled, on any replica.
	ScheduleRunUnfinished(ctx context.Context, id string) (bool, error)
	// Muted reports whether userID is muted, and whether the thread or
	// the channel (keys as pipeline.ThreadKey) is, at now.
	Muted(ctx context.Context, userID, threadKey, channelKey string, now time.Time) (user, thread bool, err error)
}

// Roster is who the persona's people are (*persona.Persona), as the auth
// and drop stages read it.
type Roster interface {
	pipeline.Roster
	RoleOf(userID string) pipeline.Role
	ScopesOf(userID string) []string
}

// Chat is the platform as a run uses it.
type Chat interface {
	// Post posts m and returns its ts: a channel run's root post, a pause
	// notice.
	Post(ctx context.Context, m pipeline.Message) (ts string, err error)
	// UserProfile reads a person's profile: Deleted is a creator who left.
	UserProfile(ctx context.Context, userID string) (pipeline.Profile, error)
}

// Inbox is the durable inbox as a run uses it (the service's adapter of
// internal/inbox and the store).
type Inbox interface {
	// Record is ev's record as the inbox keeps it, for the claim to write
	// (Claim.Record: the store's type, which this package cannot name).
	Record(ev *pipeline.Event) (any, error)
	// Rethread moves the record of ev, recorded in the thread the
	// schedule was made in, to ev's thread (a channel run's root post).
	Rethread(ctx context.Context, ev *pipeline.Event) error
}

// RunDeps are the run side's dependencies; Store, Roster, Chat and
// Deliver are required.
type RunDeps struct {
	Store  RunStore
	Roster Roster
	// Manager is the manager's user id: told in a schedule's thread when
	// it is paused.
	Manager string
	Chat    Chat
	// Inbox, when set, records a run in its claim's transaction; nil: the
	// gateway records it when delivered.
	Inbox Inbox
	// Deliver hands a run's event to the gateway, which queues it in its
	// thread (and records it in the inbox unless the claim did).
	Deliver func(ev *pipeline.Event)
	// Notify wakes the scheduler after a pause (nil: none).
	Notify func()
	// Self is the bot's identity: a run's team (nil: none).
	Self func() pipeline.Identity
	// Redact scrubs what a run posts of its prompt (nil: nothing).
	Redact func(string) string
	Clock  clock.Clock  // nil: clock.System
	Log    *slog.Logger // nil discards
}

// Runs is the scheduler's Runner (and Recorder) and the agent stage's
// pipeline.ScheduleGate: the policy of a scheduled run. A creator who may
// no longer schedule work has their schedules paused and the manager
// told; a creator who can no longer be heard where it runs has that one
// paused; a channel target posts its root message first; a run still
// going makes the next due time skip.
type Runs struct {
	d RunDeps

	mu      sync.Mutex
	running map[string]int // schedule id → its runs this replica has not finished
}

var (
	_ Runner                = (*Runs)(nil)
	_ Recorder              = (*Runs)(nil)
	_ pipeline.ScheduleGate = (*Runs)(nil)
)

// NewRuns returns the run side over d.
func NewRuns(d RunDeps) *Runs {
	if d.Store == nil || d.Roster == nil || d.Chat == nil || d.Deliver == nil {
		panic("schedule: NewRuns needs a Store, a Roster, a Chat and Deliver")
	}
	if d.Clock == nil {
		d.Clock = clock.System
	}
	if d.Self == nil {
		d.Self = func() pipeline.Identity { return pipeline.Identity{} }
	}
	if d.Redact == nil {
		d.Redact = func(s string) string { return s }
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Runs{d: d, running: map[string]int{}}
}

// Busy reports whether a run of schedule id is still going: here (from its
// delivery to the end of its turn), or anywhere as far as the inbox knows
// (recorded and not yet answered, on any replica).
func (r *Runs) Busy(ctx context.Context, id string) bool {
	r.mu.Lock()
	n := r.running[id]
	r.mu.Unlock()
	if n > 0 {
		return true
	}
	busy, err := r.d.Store.ScheduleRunUnfinished(ctx, id)
	if err != nil {
		// Unknown: run it rather than skip a due time on a read error.
		r.d.Log.Warn("schedule: busy check", "schedule_id", id, "err", err)
		return false
	}
	return busy
}

// event is the event of a claimed run: the same on every replica, under
// the run's fixed id.
func (r *Runs) event(run Run) *pipeline.Event {
	sc := run.Schedule
	return &pipeline.Event{ID: RunID(sc.ID, run.Due), Kind: pipeline.KindSchedule, Type: "schedule",
		TeamID: r.d.Self().TeamID, UserID: sc.Creator, ChannelID: sc.Channel, ThreadTS: sc.ThreadTS, Text: sc.Prompt,
		Received: r.d.Clock.Now(),
		Schedule: &pipeline.Schedule{ID: sc.ID, Name: sc.Name, Due: run.Due, Channel: sc.Channel, ThreadTS: sc.ThreadTS}}
}

// Record is the run as the inbox keeps it, for the claim to write in its
// own transaction: a crash after the claim leaves the run to the inbox.
// A channel target is recorded in the thread it was made in; Run moves it
// to the top-level message it then posts (a crash between the two: the
// run answers where it was made, in the same channel).
func (r *Runs) Record(run Run) (any, error) {
	if r.d.Inbox == nil {
		return nil, nil
	}
	return r.d.Inbox.Record(r.event(run))
}

// Run turns a claimed run into an event and hands it to the gateway, which
// records it in the inbox (unless the claim did) before queueing it in its
// thread. A channel target first posts the run's top-level message, whose
// thread the run answers in.
func (r *Runs) Run(ctx context.Context, run Run) error {
	sc := run.Schedule
	ev := r.event(run)
	ev.Recorded = run.Recorded
	// A creator who may no longer schedule work, or no longer be heard
	// where it runs, is stopped by the gate in the thread the schedule was
	// made in: no top-level post for a run that will not happen.
	if sc.Target == TargetChannel && r.creatorMay(sc.Creator) && !r.creatorLeft(ctx, sc.Creator) {
		if why, err := r.unheard(ctx, ev); err != nil || why != "" {
			// The gate pauses it and says why (or fails the run on
			// the same read error), in the thread it was made in.
			return r.deliver(ev)
		}
		// Only ever the channel it was made in: a run never carries a
		// conversation's words to another place.
		ts, err := r.d.Chat.Post(ctx, pipeline.Message{ChannelID: sc.Channel, Text: r.d.Redact(rootText(sc))})
		if err != nil {
			if run.Recorded {
				// Recorded in the thread it was made in: it answers there.
				r.d.Log.WarnContext(ctx, "schedule: the run's top-level message could not be posted; it runs where it was made",
					"schedule_id", sc.ID, "err", err)
				return r.deliver(ev)
			}
			return fmt.Errorf("schedule %s: post the run's message in %s: %w", sc.ID, sc.Channel, err)
		}
		ev.ThreadTS = ts
		if run.Recorded && r.d.Inbox != nil {
			if err := r.d.Inbox.Rethread(ctx, ev); err != nil {
				// The record still names the thread it was made in: a
				// resumed run answers there. This one goes on here.
				r.d.Log.WarnContext(ctx, "schedule: the run's record keeps the thread it was made in", "schedule_id", sc.ID, "err", err)
			}
		}
	}
	return r.deliver(ev)
}

// deliver hands ev to the gateway as a run of this replica's.
func (r *Runs) deliver(ev *pipeline.Event) error {
	r.mu.Lock()
	r.running[ev.Schedule.ID]++
	r.mu.Unlock()
	r.d.Deliver(ev)
	return nil
}

// Handled is told of every event the gateway handled: a run of this
// replica's is over.
func (r *Runs) Handled(ev *pipeline.Event) {
	if ev.Kind != pipeline.KindSchedule || ev.Schedule == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[ev.Schedule.ID] <= 1 {
		delete(r.running, ev.Schedule.ID) // a resumed run was never counted
		return
	}
	r.running[ev.Schedule.ID]--
}

// creatorMay reports whether the creator may still schedule work, read as
// the auth stage reads it.
func (r *Runs) creatorMay(creator string) bool {
	p := r.d.Roster
	return !p.IsBlocked(creator) && MaySchedule(pipeline.Access{Role: p.RoleOf(creator), Scopes: p.ScopesOf(creator)})
}

// unheard says why the creator of the run ev can no longer be heard where
// it runs, as the drop stage would not hear them typing it there, or ""
// when they can: the conversation's trust layer no longer admits them (it
// left the persona's channel lists), they are muted (/ignore), or the
// thread it was made in or its channel is (/ignore-thread). Neither
// applies to the manager or the backup.
func (r *Runs) unheard(ctx context.Context, ev *pipeline.Event) (string, error) {
	p, creator := r.d.Roster, ev.UserID
	if p.IsManager(creator) {
		return "", nil
	}
	if pipeline.LayerRefuses(p, p.Layer(ev.ChannelID, ev.IsDM()), creator) != "" {
		return fmt.Sprintf("its creator <@%s> may no longer speak in this conversation (its trust layer does not admit them)", creator), nil
	}
	user, thread, err := r.d.Store.Muted(ctx, creator, pipeline.ThreadKey(ev.ChannelID, ev.Schedule.ThreadTS),
		pipeline.ThreadKey(ev.ChannelID, ""), r.d.Clock.Now())
	switch {
	case err != nil:
		return "", fmt.Errorf("schedule: mutes of its creator: %w", err)
	case user:
		return fmt.Sprintf("its creator <@%s> is muted (`/unignore <@%s>` lifts it)", creator, creator), nil
	case thread:
		return "this conversation is muted (`/unignore-thread` lifts it)", nil
	}
	return "", nil
}

// Allow lets a run go on when its creator, as the auth stage resolved
// them, may still schedule work. Otherwise every schedule of theirs is
// paused and the manager is told in the thread each was made in.
func (r *Runs) Allow(ctx context.Context, ev *pipeline.Event, a pipeline.Access) (bool, error) {
	if !r.d.Roster.IsBlocked(ev.UserID) && MaySchedule(a) && !r.creatorLeft(ctx, ev.UserID) {
		why, err := r.unheard(ctx, ev)
		if err != nil || why == "" {
			return err == nil, err
		}
		return false, r.pauseOne(ctx, ev, why)
	}
	paused, err := r.d.Store.PauseSchedulesOf(ctx, ev.UserID)
	if err != nil {
		return false, err
	}
	r.notify()
	if !slices.ContainsFunc(paused, func(sc Schedule) bool { return sc.ID == ev.Schedule.ID }) {
		// Paused already (an earlier run of another of theirs), or a
		// one-off that came: its own thread is told all the same.
		sc, err := r.stored(ctx, ev)
		if err != nil {
			return false, err
		}
		paused = append(paused, sc)
	}
	r.d.Log.InfoContext(ctx, "schedule: creator may no longer schedule work; their schedules are paused",
		"creator", ev.UserID, "role", string(a.Role), "paused", len(paused))
	for _, sc := range paused {
		r.tellPaused(ctx, sc, fmt.Sprintf("its creator <@%s> can no longer schedule work", sc.Creator))
	}
	return false, nil
}

// pauseOne pauses the schedule of the run ev alone, where its creator can
// no longer be heard (why): their other schedules run elsewhere, or after
// the mute is lifted. The manager is told in the thread it was made in.
func (r *Runs) pauseOne(ctx context.Context, ev *pipeline.Event, why string) error {
	if err := r.d.Store.PauseSchedule(ctx, ev.Schedule.ID); err != nil {
		return err
	}
	r.notify()
	sc, err := r.stored(ctx, ev)
	if err != nil {
		return err
	}
	r.d.Log.InfoContext(ctx, "schedule: its creator can no longer be heard where it runs; it is paused",
		"schedule_id", sc.ID, "creator", ev.UserID, "why", why)
	r.tellPaused(ctx, sc, why)
	return nil
}

// stored is the schedule of the run ev as stored, or as the run knows it
// when it is gone (a one-off that came: its own thread is told all the
// same).
func (r *Runs) stored(ctx context.Context, ev *pipeline.Event) (Schedule, error) {
	sc, err := r.d.Store.Schedule(ctx, ev.Schedule.ID)
	if errors.Is(err, ErrNotFound) {
		return Schedule{ID: ev.Schedule.ID, Name: ev.Schedule.Name, Creator: ev.UserID,
			Channel: ev.Schedule.Channel, ThreadTS: ev.Schedule.ThreadTS}, nil
	}
	return sc, err
}

func (r *Runs) notify() {
	if r.d.Notify != nil {
		r.d.Notify()
	}
}

// tellPaused tells the manager, in the thread sc was made in, that it
// was paused and why.
func (r *Runs) tellPaused(ctx context.Context, sc Schedule, why string) {
	msg := pipeline.Message{ChannelID: sc.Channel, ThreadTS: sc.ThreadTS, Text: pausedText(r.d.Manager, sc, why)}
	if _, err := r.d.Chat.Post(ctx, msg); err != nil {
		r.d.Log.ErrorContext(ctx, "schedule: pause not told", "schedule_id", sc.ID, "err", err)
	}
}

// creatorLeft reports whether the platform says the creator's account is
// gone (deactivated: they left the workspace). A profile that cannot be
// read counts as present: a read error must not pause a schedule.
func (r *Runs) creatorLeft(ctx context.Context, user string) bool {
	p, err := r.d.Chat.UserProfile(ctx, user)
	if err != nil {
		r.d.Log.WarnContext(ctx, "schedule: the creator's profile could not be read", "creator", user, "err", err)
		return false
	}
	return p.Deleted
}
