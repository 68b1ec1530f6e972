package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// ScheduleStore keeps the schedules (*store.Store).
type ScheduleStore interface {
	CreateSchedule(ctx context.Context, sc schedule.Schedule, max int) (schedule.Schedule, error)
	Schedules(ctx context.Context) ([]schedule.Schedule, error)
	Schedule(ctx context.Context, id string) (schedule.Schedule, error)
	RemoveSchedule(ctx context.Context, id string) error
	ResumeSchedule(ctx context.Context, id, creator string, next time.Time) (bool, error)
}

// Schedules is the persona's book of schedules, for the /schedule
// commands and the agent_schedule tools alike (it is their
// tools.ScheduleBook): who may, the checks of a new schedule, the pinned
// texts (interfaces.md, "Schedules"). Running them is the scheduler's
// (internal/schedule); Notify wakes it after every change.
type Schedules struct {
	Store ScheduleStore
	// Now is the clock a new schedule's first run is counted from: the
	// scheduler's.
	Now func() time.Time
	// AgentZone is AGENT_TZ's zone (config.Config.Zone): the zone of a
	// creator whose profile has none; nil is UTC.
	AgentZone *time.Location
	// Max is AGENT_MAX_SCHEDULES.
	Max int
	// Profile reads a person's profile (users.info) for their time zone;
	// nil, or an error, skips to AgentZone.
	Profile func(ctx context.Context, userID string) (pipeline.Profile, error)
	// Notify tells the scheduler the schedules changed; nil: none runs.
	Notify func()
	// NewID makes a new schedule's id (nil: schedule.NewID).
	NewID func() string
	Log   *slog.Logger
}

var _ tools.ScheduleBook = (*Schedules)(nil)

// Texts of the schedules (interfaces.md, "Schedules"; the original
// runtime's cron job answers).
const (
	msgScheduleRefused = "only manager or approver can schedule work"
	msgCreated         = "cron job created: %s, next run %s"
	msgChannelRoot     = " (posts at the channel root)"
	msgListHead        = "Active cron jobs:"
	msgNoSchedules     = "No cron jobs."
	msgRemoved         = "cron job %s removed"
	msgNoSuch          = "no cron job %s"
	usageSchedule      = `usage: /schedule "<when>" "<prompt>" [channel]`
	usageUnschedule    = "usage: /unschedule <id>"
	// Resuming a paused schedule (not the original runtime's: it had no
	// pause).
	msgResumed   = "cron job resumed, running as <@%s> from now on: %s"
	msgNotPaused = "cron job %s is not paused"
	msgNoRunLeft = "cron job %s has no run left: `/unschedule %s` removes it"
)

// MaySchedule is the manager, the backup manager, or an approver whose
// scopes are "anything" or name "schedule": a schedule acts on its own
// later, with its creator's authority, where nobody asked. The same rule
// lets a run go on (its creator's role when it runs).
func MaySchedule(a pipeline.Access) bool {
	return a.HasScope(persona.ScopeSchedule)
}

func refusal(msg string) error { return &pipeline.UserError{Message: msg} }

// Add checks and stores a new schedule made by a, in ev's conversation:
// a thread target is ev's thread, a channel target posts at the root of
// ev's channel (where there is no thread, as for a slash command, the
// channel is the target).
func (s *Schedules) Add(ctx context.Context, a pipeline.Access, ev *pipeline.Event, r tools.ScheduleRequest) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgScheduleRefused)
	}
	target := schedule.Target(strings.ToLower(strings.TrimSpace(r.Target)))
	if target == "" {
		target = schedule.TargetThread
		if ev.RootTS() == "" {
			target = schedule.TargetChannel
		}
	}
	creator := a.UserID
	if creator == "" {
		creator = ev.UserID
	}
	loc, err := schedule.Zone(r.TZ, s.profileZone(ctx, creator, r.TZ), s.AgentZone)
	if err != nil {
		return "", userError(err)
	}
	sc, err := schedule.New(schedule.Request{Creator: creator, Channel: ev.ChannelID, ThreadTS: ev.RootTS(),
		Target: target, When: r.When, Prompt: r.Prompt, Name: r.Name}, loc, s.now())
	if err != nil {
		return "", userError(err)
	}
	if s.NewID != nil {
		sc.ID = s.NewID()
	}
	sc, err = s.Store.CreateSchedule(ctx, sc, s.Max)
	if errors.Is(err, schedule.ErrLimit) {
		return "", refusal(schedule.LimitError(s.Max).Error())
	}
	if err != nil {
		return "", err
	}
	s.notify()
	s.Log.InfoContext(ctx, "schedule created", "schedule_id", sc.ID, "user_id", creator, "channel", sc.Channel,
		"target", string(sc.Target), "when", sc.When, "tz", sc.TZ)
	msg := fmt.Sprintf(msgCreated, sc.ID, ShowTime(sc.NextRunAt, sc.TZ))
	if sc.Target == schedule.TargetChannel {
		msg += msgChannelRoot
	}
	return msg, nil
}

// List says the schedules made in ev's conversation. Those of other
// conversations are counted, not shown: their prompts were said where
// this conversation's people may not read (`agent schedules` lists all).
func (s *Schedules) List(ctx context.Context, a pipeline.Access, ev *pipeline.Event) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgScheduleRefused)
	}
	all, err := s.Store.Schedules(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	others := 0
	for _, sc := range all {
		if sc.Channel != ev.ChannelID {
			others++
			continue
		}
		if b.Len() == 0 {
			b.WriteString(msgListHead)
		}
		b.WriteString("\n- " + Line(sc))
	}
	if b.Len() == 0 {
		b.WriteString(msgNoSchedules)
	}
	if others > 0 {
		fmt.Fprintf(&b, "\n(%d more made in other conversations, not shown here)", others)
	}
	return b.String(), nil
}

// Remove removes the schedule id, made in ev's conversation: elsewhere it
// is not found, as the lists do not show it, except for the manager and
// the backup manager (`agent schedules remove` is the operator's).
func (s *Schedules) Remove(ctx context.Context, a pipeline.Access, ev *pipeline.Event, id string) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgScheduleRefused)
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return "", refusal(usageUnschedule)
	}
	if !schedule.ValidID(id) {
		return "", refusal(fmt.Sprintf(msgNoSuch, quiet(id, maxIDEcho)))
	}
	sc, err := s.Store.Schedule(ctx, id)
	if err == nil && sc.Channel != ev.ChannelID && !a.Managing() {
		err = store.ErrNotFound
	}
	if err == nil {
		err = s.Store.RemoveSchedule(ctx, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return "", refusal(fmt.Sprintf(msgNoSuch, id))
	}
	if err != nil {
		return "", err
	}
	s.notify()
	s.Log.InfoContext(ctx, "schedule removed", "schedule_id", id, "user_id", a.UserID, "channel", ev.ChannelID)
	return fmt.Sprintf(msgRemoved, id), nil
}

// Resume runs the paused schedule id again with a's authority: a takes
// it over, and it runs as a from its next due time on (the runs missed
// while it was paused are not caught up). Only in the conversation it was
// made in, where its prompt was written: elsewhere it is not found, as
// the lists do not show it, and nobody adopts a prompt they could not
// read. The answer shows the prompt adopted.
func (s *Schedules) Resume(ctx context.Context, a pipeline.Access, ev *pipeline.Event, id string) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgScheduleRefused)
	}
	id = strings.TrimSpace(id)
	if !schedule.ValidID(id) {
		return "", refusal(fmt.Sprintf(msgNoSuch, quiet(id, maxIDEcho)))
	}
	sc, err := s.Store.Schedule(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && sc.Channel != ev.ChannelID) {
		return "", refusal(fmt.Sprintf(msgNoSuch, id))
	}
	if err != nil {
		return "", err
	}
	if !sc.Paused {
		return "", refusal(fmt.Sprintf(msgNotPaused, id))
	}
	spec, err := sc.Spec()
	if err != nil {
		return "", err
	}
	next := spec.Next(s.now())
	if next.IsZero() {
		return "", refusal(fmt.Sprintf(msgNoRunLeft, id, id))
	}
	creator := a.UserID
	if creator == "" {
		creator = ev.UserID
	}
	resumed, err := s.Store.ResumeSchedule(ctx, id, creator, next)
	if errors.Is(err, store.ErrNotFound) {
		return "", refusal(fmt.Sprintf(msgNoSuch, id))
	}
	if err != nil {
		return "", err
	}
	if !resumed { // resumed meanwhile, by someone else
		return "", refusal(fmt.Sprintf(msgNotPaused, id))
	}
	s.notify()
	s.Log.InfoContext(ctx, "schedule resumed", "schedule_id", id, "user_id", creator, "was_creator", sc.Creator,
		"channel", ev.ChannelID, "next", next)
	sc.Creator, sc.Paused, sc.NextRunAt = creator, false, next
	return fmt.Sprintf(msgResumed, creator, Line(sc)), nil
}

func (s *Schedules) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Schedules) notify() {
	if s.Notify != nil {
		s.Notify()
	}
}

// profileZone is the creator's profile time zone, "" when tz is given,
// when there is no profile reader or the platform does not answer.
func (s *Schedules) profileZone(ctx context.Context, userID, tz string) string {
	if strings.TrimSpace(tz) != "" || s.Profile == nil || userID == "" {
		return ""
	}
	p, err := s.Profile(ctx, userID)
	if err != nil {
		s.Log.DebugContext(ctx, "profile time zone", "user_id", userID, "err", err)
		return ""
	}
	return p.TimeZone
}

// userError is err as the one line to show when it is about the
// request (schedule.ErrInvalid), else err.
func userError(err error) error {
	if errors.Is(err, schedule.ErrInvalid) {
		return &pipeline.UserError{Message: err.Error()}
	}
	return err
}

// ShowTime is t in the zone tz, unambiguous: "2026-11-30 09:00
// Europe/Berlin" (seconds only when set: a one-off `in 90s`).
func ShowTime(t time.Time, tz string) string {
	if t.IsZero() {
		return "none"
	}
	loc, err := schedule.LoadZone(tz)
	if err != nil {
		loc = time.UTC
	}
	layout := "2006-01-02 15:04"
	if t.Second() != 0 {
		layout += ":05"
	}
	return t.In(loc).Format(layout) + " " + loc.String()
}

// maxPromptShown and maxIDEcho bound what a list line and a refusal
// repeat of what a person typed.
const (
	maxPromptShown = 120
	maxIDEcho      = 40
)

// Line is one schedule in a list: id, when, target, next run, prompt.
func Line(sc schedule.Schedule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s `%s` [%s] next run %s", sc.ID, sc.When, sc.Target, ShowTime(sc.NextRunAt, sc.TZ))
	if sc.Paused {
		b.WriteString(" (paused)")
	}
	if sc.Name != "" {
		b.WriteString(" · " + quiet(sc.Name, maxPromptShown))
	}
	b.WriteString(": " + quiet(sc.Prompt, maxPromptShown))
	return b.String()
}

// quiet is what a person typed, repeated on one line, cut at max runes,
// with its special mentions (<!channel>, <!here>) broken so that
// repeating it pings nobody.
func quiet(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return Unbroadcast(s)
}

// Unbroadcast breaks the special mentions in s (<!channel>, <!here>,
// <!everyone>, <!subteam^…>) so that posting it pings nobody: what a
// person typed, posted again by the runtime (a scheduled run's root post,
// a pause notice).
func Unbroadcast(s string) string {
	return strings.ReplaceAll(s, "<!", "< !")
}
