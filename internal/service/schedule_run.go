package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The run side of scheduled work: the scheduler (internal/schedule) claims
// a due run and hands it here; a run becomes a KindSchedule event that
// the gateway records in the inbox (under schedule.RunID, the same id on
// every replica) and runs through the same chain as a message, with its
// creator's authority (the gate below, after the auth stage).

// scheduleRuns is the scheduler's Runner and the agent stage's
// ScheduleGate.
type scheduleRuns struct {
	s *Service

	mu      sync.Mutex
	running map[string]int // schedule id → its runs this replica has not finished
}

var (
	_ schedule.Runner       = (*scheduleRuns)(nil)
	_ schedule.Recorder     = (*scheduleRuns)(nil)
	_ pipeline.ScheduleGate = (*scheduleRuns)(nil)
)

func newScheduleRuns(s *Service) *scheduleRuns {
	return &scheduleRuns{s: s, running: map[string]int{}}
}

// Busy reports whether a run of schedule id is still going: here (from its
// delivery to the end of its turn), or anywhere as far as the inbox knows
// (recorded and not yet answered, on any replica).
func (r *scheduleRuns) Busy(id string) bool {
	r.mu.Lock()
	n := r.running[id]
	r.mu.Unlock()
	if n > 0 {
		return true
	}
	busy, err := r.s.store.ScheduleRunUnfinished(r.s.runContext(), id)
	if err != nil {
		// Unknown: run it rather than skip a due time on a read error.
		r.s.log.Warn("schedule: busy check", "schedule_id", id, "err", err)
		return false
	}
	return busy
}

// runEvent is the event of a claimed run: the same on every replica, under
// the run's fixed id.
func (r *scheduleRuns) runEvent(run schedule.Run) *pipeline.Event {
	sc := run.Schedule
	return &pipeline.Event{ID: schedule.RunID(sc.ID, run.Due), Kind: pipeline.KindSchedule, Type: "schedule",
		TeamID: r.s.self.TeamID, UserID: sc.Creator, ChannelID: sc.Channel, ThreadTS: sc.ThreadTS, Text: sc.Prompt,
		Received: r.s.clock.Now(),
		Schedule: &pipeline.Schedule{ID: sc.ID, Name: sc.Name, Due: run.Due, Channel: sc.Channel, ThreadTS: sc.ThreadTS}}
}

// Record is the run as the inbox keeps it, for the claim to write in its
// own transaction: a crash after the claim leaves the run to the inbox.
// A channel target is recorded in the thread it was made in; Run moves it
// to the top-level message it then posts (a crash between the two: the
// run answers where it was made, in the same channel).
func (r *scheduleRuns) Record(run schedule.Run) (*schedule.RunRecord, error) {
	if r.s.inbox == nil {
		return nil, nil
	}
	e, err := r.s.inbox.Entry(r.runEvent(run))
	if err != nil {
		return nil, err
	}
	return &schedule.RunRecord{EventID: e.EventID, Kind: e.Kind, ChannelID: e.ChannelID, ThreadTS: e.ThreadTS,
		UserID: e.UserID, Event: e.Event}, nil
}

// Run turns a claimed run into an event and hands it to the gateway, which
// records it in the inbox (unless the claim did) before queueing it in its
// thread. A channel target first posts the run's top-level message, whose
// thread the run answers in.
func (r *scheduleRuns) Run(ctx context.Context, run schedule.Run) error {
	sc := run.Schedule
	ev := r.runEvent(run)
	ev.Recorded = run.Recorded
	// A creator who may no longer schedule work, or no longer be heard
	// where it runs, is stopped by the gate in the thread the schedule was
	// made in: no top-level post for a run that will not happen.
	if sc.Target == schedule.TargetChannel && r.creatorMay(sc.Creator) && !r.creatorLeft(ctx, sc.Creator) {
		if why, err := r.unheard(ctx, ev); err != nil || why != "" {
			// The gate pauses it and says why (or fails the run on
			// the same read error), in the thread it was made in.
			return r.deliver(ev)
		}
		// Only ever the channel it was made in: a run never carries a
		// conversation's words to another place.
		ts, err := r.s.chat.Post(ctx, pipeline.Message{ChannelID: sc.Channel, Text: r.s.redactor.Redact(channelRootText(sc))})
		if err != nil {
			if run.Recorded {
				// Recorded in the thread it was made in: it answers there.
				r.s.log.WarnContext(ctx, "schedule: the run's top-level message could not be posted; it runs where it was made",
					"schedule_id", sc.ID, "err", err)
				return r.deliver(ev)
			}
			return fmt.Errorf("schedule %s: post the run's message in %s: %w", sc.ID, sc.Channel, err)
		}
		ev.ThreadTS = ts
		if run.Recorded {
			if err := r.rethread(ctx, ev); err != nil {
				// The record still names the thread it was made in: a
				// resumed run answers there. This one goes on here.
				r.s.log.WarnContext(ctx, "schedule: the run's record keeps the thread it was made in", "schedule_id", sc.ID, "err", err)
			}
		}
	}
	return r.deliver(ev)
}

// rethread moves a recorded channel run's inbox record to its top-level
// message's thread.
func (r *scheduleRuns) rethread(ctx context.Context, ev *pipeline.Event) error {
	e, err := r.s.inbox.Entry(ev)
	if err != nil {
		return err
	}
	return r.s.store.InboxRethread(ctx, e.EventID, e.ThreadTS, e.Event)
}

// deliver hands ev to the gateway as a run of this replica's.
func (r *scheduleRuns) deliver(ev *pipeline.Event) error {
	r.mu.Lock()
	r.running[ev.Schedule.ID]++
	r.mu.Unlock()
	if r.s.onScheduleRun != nil {
		r.s.onScheduleRun(ev)
	}
	r.s.gateway.Deliver(ev)
	return nil
}

// handled is told of every event the gateway handled: a run of this
// replica's is over.
func (r *scheduleRuns) handled(ev *pipeline.Event) {
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
func (r *scheduleRuns) creatorMay(creator string) bool {
	p := r.s.persona
	return !p.IsBlocked(creator) && commands.MaySchedule(pipeline.Access{Role: p.RoleOf(creator), Scopes: p.ScopesOf(creator)})
}

// channelRootText is the top-level message a channel run answers under,
// its words' special mentions (<!channel>, <!here>) broken: the runtime
// posts it, and it pings nobody.
func channelRootText(sc schedule.Schedule) string {
	if sc.Name != "" {
		return "Scheduled: " + commands.Unbroadcast(sc.Name)
	}
	return "Scheduled: " + commands.Unbroadcast(sc.Prompt)
}

// unheard says why the creator of the run ev can no longer be heard where
// it runs, as the drop stage would not hear them typing it there, or ""
// when they can: the conversation's trust layer no longer admits them (it
// left the persona's channel lists), they are muted (/ignore), or the
// thread it was made in or its channel is (/ignore-thread). Neither
// applies to the manager or the backup.
func (r *scheduleRuns) unheard(ctx context.Context, ev *pipeline.Event) (string, error) {
	p, creator := r.s.persona, ev.UserID
	if p.IsManager(creator) {
		return "", nil
	}
	if pipeline.LayerRefuses(p, p.Layer(ev.ChannelID, ev.IsDM()), creator) != "" {
		return fmt.Sprintf("its creator <@%s> may no longer speak in this conversation (its trust layer does not admit them)", creator), nil
	}
	user, thread, err := r.s.store.Muted(ctx, creator, pipeline.ThreadKey(ev.ChannelID, ev.Schedule.ThreadTS),
		pipeline.ThreadKey(ev.ChannelID, ""), r.s.now())
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
func (r *scheduleRuns) Allow(ctx context.Context, ev *pipeline.Event, a pipeline.Access) (bool, error) {
	if !r.s.persona.IsBlocked(ev.UserID) && commands.MaySchedule(a) && !r.creatorLeft(ctx, ev.UserID) {
		why, err := r.unheard(ctx, ev)
		if err != nil || why == "" {
			return err == nil, err
		}
		return false, r.pauseOne(ctx, ev, why)
	}
	paused, err := r.s.store.PauseSchedulesOf(ctx, ev.UserID)
	if err != nil {
		return false, err
	}
	if r.s.scheduler != nil {
		r.s.scheduler.Notify()
	}
	if !slices.ContainsFunc(paused, func(sc schedule.Schedule) bool { return sc.ID == ev.Schedule.ID }) {
		// Paused already (an earlier run of another of theirs), or a
		// one-off that came: its own thread is told all the same.
		sc, err := r.s.store.Schedule(ctx, ev.Schedule.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		if err != nil {
			sc = schedule.Schedule{ID: ev.Schedule.ID, Name: ev.Schedule.Name, Creator: ev.UserID,
				Channel: ev.Schedule.Channel, ThreadTS: ev.Schedule.ThreadTS}
		}
		paused = append(paused, sc)
	}
	r.s.log.InfoContext(ctx, "schedule: creator may no longer schedule work; their schedules are paused",
		"creator", ev.UserID, "role", string(a.Role), "paused", len(paused))
	for _, sc := range paused {
		r.tellPaused(ctx, sc, fmt.Sprintf("its creator <@%s> can no longer schedule work", sc.Creator))
	}
	return false, nil
}

// pauseOne pauses the schedule of the run ev alone, where its creator can
// no longer be heard (why): their other schedules run elsewhere, or after
// the mute is lifted. The manager is told in the thread it was made in.
func (r *scheduleRuns) pauseOne(ctx context.Context, ev *pipeline.Event, why string) error {
	if err := r.s.store.PauseSchedule(ctx, ev.Schedule.ID); err != nil {
		return err
	}
	if r.s.scheduler != nil {
		r.s.scheduler.Notify()
	}
	sc, err := r.s.store.Schedule(ctx, ev.Schedule.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err != nil { // a one-off that came: its own thread is told all the same
		sc = schedule.Schedule{ID: ev.Schedule.ID, Name: ev.Schedule.Name, Creator: ev.UserID,
			Channel: ev.Schedule.Channel, ThreadTS: ev.Schedule.ThreadTS}
	}
	r.s.log.InfoContext(ctx, "schedule: its creator can no longer be heard where it runs; it is paused",
		"schedule_id", sc.ID, "creator", ev.UserID, "why", why)
	r.tellPaused(ctx, sc, why)
	return nil
}

// tellPaused tells the manager, in the thread sc was made in, that it
// was paused and why.
func (r *scheduleRuns) tellPaused(ctx context.Context, sc schedule.Schedule, why string) {
	msg := pipeline.Message{ChannelID: sc.Channel, ThreadTS: sc.ThreadTS, Text: pausedText(r.s.persona.Manager.UserID, sc, why)}
	if _, err := r.s.chat.Post(ctx, msg); err != nil {
		r.s.log.ErrorContext(ctx, "schedule: pause not told", "schedule_id", sc.ID, "err", err)
	}
}

// creatorLeft reports whether the platform says the creator's account is
// gone (deactivated: they left the workspace). A profile that cannot be
// read counts as present: a read error must not pause a schedule.
func (r *scheduleRuns) creatorLeft(ctx context.Context, user string) bool {
	p, err := r.s.chat.UserProfile(ctx, user)
	if err != nil {
		r.s.log.WarnContext(ctx, "schedule: the creator's profile could not be read", "creator", user, "err", err)
		return false
	}
	return p.Deleted
}

// pausedText tells the manager that a schedule was paused, why, and what
// they can do: a paused schedule runs again only once someone who may
// schedule work resumes it (then as them), or it is removed. Its name's
// special mentions are broken: the notice pings the manager alone.
func pausedText(manager string, sc schedule.Schedule, why string) string {
	who := ""
	if manager != "" {
		who = "<@" + manager + "> "
	}
	label := sc.ID
	if sc.Name != "" {
		label += " (" + commands.Unbroadcast(sc.Name) + ")"
	}
	return fmt.Sprintf("%scron job %s paused: %s. "+
		"`/schedule resume %s` here runs it again as you; `/unschedule %s` removes it", who, label, why, sc.ID, sc.ID)
}

// wireSchedules builds the run side of scheduled work: the runs and their
// gate (before the chain, which routes runs to the gate), and the
// scheduler (after the gateway, which runs are delivered to). Run starts
// the scheduler once the gateway takes events (startSchedules).
func (s *Service) wireSchedules() {
	s.clock = cmp.Or[clock.Clock](s.clock, clock.System)
	s.schedules = newScheduleRuns(s)
}

// newScheduler builds the scheduler over the service's store, clock and
// runs; every replica runs its own, and the store's claim runs each due
// time once among them.
func (s *Service) newScheduler(idle func(time.Time)) error {
	sch, err := schedule.NewScheduler(schedule.Deps{Store: s.store, Runner: s.schedules, Clock: s.clock,
		Window: s.cfg.ScheduleCatchUp, Metrics: s.metrics, Logger: s.log.With("component", "schedule"), Idle: idle})
	if err != nil {
		return err
	}
	s.scheduler = sch
	// The commands and tools wake it after every change, and count a new
	// schedule's first run on its clock (the simulator's, in the sim).
	s.schedBook.Notify, s.schedBook.Now = sch.Notify, s.clock.Now
	return nil
}

// onHandled observes the gateway for the runs, then calls next (nil:
// none).
func (s *Service) onHandled(next func(*pipeline.Event, error)) func(*pipeline.Event, error) {
	return func(ev *pipeline.Event, err error) {
		s.schedules.handled(ev)
		if next != nil {
			next(ev, err)
		}
	}
}

// startThenResume is the gateway's OnStart: once the gateway takes
// events, the scheduler starts (runs delivered before would be refused),
// and what the last run left unfinished is resumed. A resumed run is
// known busy all the same: the inbox holds it unfinished.
func (s *Service) startThenResume(deliver func(*pipeline.Event)) {
	s.startSchedules(s.runContext())
	s.resume(deliver)
}

// startSchedules runs the scheduler until ctx is done (run waits for it).
func (s *Service) startSchedules(ctx context.Context) {
	s.schedWG.Add(1)
	go func() {
		defer s.schedWG.Done()
		if err := s.scheduler.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Error("scheduler stopped", "err", err)
		}
	}()
}

// runContext is the service's life (run's context), or Background before
// it runs.
func (s *Service) runContext() context.Context {
	if s.runCtx != nil {
		return s.runCtx
	}
	return context.Background()
}
