package service

import (
	"cmp"
	"context"
	"time"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
)

// newScheduleBook is the persona's book of schedules, shared by the
// /schedule commands and the agent_schedule tools. Its Notify is nil
// until the scheduler is wired: the scheduler sets it (and Now, to its
// clock) so that a change wakes its timer.
func (s *Service) newScheduleBook(chat ChatAPI, newID func() string) *commands.Schedules {
	// A configuration built by hand (the simulator's) has no limit set:
	// the default, not zero.
	return &commands.Schedules{Store: s.store, Now: time.Now, AgentTZ: s.cfg.TZ, Max: cmp.Or(s.cfg.MaxSchedules, config.DefaultMaxSchedules),
		Profile: chat.UserProfile, NewID: newID, Log: s.log}
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
	if sc, err = s.store.CreateSchedule(ctx, sc, cmp.Or(s.cfg.MaxSchedules, store.DefaultMaxSchedules)); err != nil {
		return sc, err
	}
	s.scheduler.Notify()
	return sc, nil
}

// WakeScheduler makes the scheduler read the due schedules again.
func (s *Service) WakeScheduler() { s.scheduler.Notify() }

// Persona is the persona the service runs.
func (s *Service) Persona() *persona.Persona { return s.persona }
