package service

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Scheduled work is internal/schedule's: the book of the /schedule
// commands and the agent_schedule tools, the run side (the policy of a
// due run: its gate, the channel root post, the pause) and the scheduler.
// The service only connects them to the store, the chat, the inbox and
// the gateway.

// newScheduleBook is the persona's book of schedules, shared by the
// /schedule commands and the agent_schedule tools, on the service's clock.
// Its Notify is nil until the scheduler is wired: newScheduler sets it so
// that a change wakes its timer.
func (s *Service) newScheduleBook(chat ChatAPI, newID func() string) (*schedule.Book, error) {
	// A configuration built by hand (the simulator's) has no limit set:
	// the book's default, not zero.
	return &schedule.Book{Store: s.store, Now: s.now, Zone: s.cfg.Zone, Max: s.cfg.MaxSchedules,
		Profile: chat.UserProfile, NewID: newID, Log: s.log}, nil
}

// AddSchedule stores a schedule id made at the service's clock's time (in
// UTC) and wakes the scheduler, as the schedule commands do (the
// simulator's schedule step).
func (s *Service) AddSchedule(ctx context.Context, id string, req schedule.Request) (schedule.Schedule, error) {
	sc, err := schedule.New(req, time.UTC, s.now())
	if err != nil {
		return sc, err
	}
	sc.ID = id
	if sc, err = s.store.CreateSchedule(ctx, sc, cmp.Or(s.cfg.MaxSchedules, schedule.DefaultMax)); err != nil {
		return sc, err
	}
	s.scheduler.Notify()
	return sc, nil
}

// WakeScheduler makes the scheduler read the due schedules again.
func (s *Service) WakeScheduler() { s.scheduler.Notify() }

// Persona is the persona the service runs.
func (s *Service) Persona() *persona.Persona { return s.persona }

// wireSchedules builds the run side of scheduled work (before the chain,
// which routes runs to its gate). What it delivers to, records in and
// wakes is built after it (the gateway, the inbox, the scheduler): it
// reaches them through the service when a run comes. Run starts the
// scheduler once the gateway takes events (startSchedules).
func (s *Service) wireSchedules(chat ChatAPI) {
	s.clock = cmp.Or[clock.Clock](s.clock, clock.System)
	s.schedules = schedule.NewRuns(schedule.RunDeps{Store: s.store, Roster: s.persona, Manager: s.persona.Manager.UserID,
		Chat: chat, Inbox: runInbox{s},
		Deliver: func(ev *pipeline.Event) {
			if s.onScheduleRun != nil {
				s.onScheduleRun(ev)
			}
			s.gateway.Deliver(ev)
		},
		Notify: func() {
			if s.scheduler != nil {
				s.scheduler.Notify()
			}
		},
		Self: func() pipeline.Identity { return s.self }, Redact: s.redactor.Redact, Clock: s.clock,
		Log: s.log})
}

// runInbox is the inbox as the runs record in it: the inbox's record of
// an event, written by the store.
type runInbox struct{ s *Service }

// Record is ev's inbox record (a *store.InboxEntry), nil without an inbox.
func (i runInbox) Record(ev *pipeline.Event) (any, error) {
	if i.s.inbox == nil {
		return nil, nil
	}
	e, err := i.s.inbox.Entry(ev)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// Rethread moves ev's record to ev's thread.
func (i runInbox) Rethread(ctx context.Context, ev *pipeline.Event) error {
	if i.s.inbox == nil {
		return nil
	}
	e, err := i.s.inbox.Entry(ev)
	if err != nil {
		return err
	}
	return i.s.store.InboxRethread(ctx, e.EventID, e.ThreadTS, e.Event)
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
	// The commands and tools wake it after every change.
	s.schedBook.Notify = sch.Notify
	return nil
}

// onHandled observes the gateway for the runs, then calls next (nil:
// none).
func (s *Service) onHandled(next func(*pipeline.Event, error)) func(*pipeline.Event, error) {
	return func(ev *pipeline.Event, err error) {
		s.schedules.Handled(ev)
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
