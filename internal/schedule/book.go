package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// ErrNotFound matches the error of a BookStore or a RunStore asked for a
// schedule there is none of (the store's errors match it).
var ErrNotFound = errors.New("no such schedule")

// BookStore keeps the schedules (*store.Store). Schedule, RemoveSchedule
// and ResumeSchedule return an error matching ErrNotFound for an id there
// is none of.
type BookStore interface {
	// CreateSchedule stores sc, at most max per persona (past it: an
	// error matching ErrLimit), and returns it as stored.
	CreateSchedule(ctx context.Context, sc Schedule, max int) (Schedule, error)
	Schedules(ctx context.Context) ([]Schedule, error)
	Schedule(ctx context.Context, id string) (Schedule, error)
	RemoveSchedule(ctx context.Context, id string) error
	// ResumeSchedule runs the paused schedule id again as creator, next
	// due at next; resumed is false when it was not paused.
	ResumeSchedule(ctx context.Context, id, creator string, next time.Time) (resumed bool, err error)
}

// Book is the persona's book of schedules, for the /schedule commands
// (Commands) and the agent_schedule tools (Tools) alike: who may, the
// checks of a new schedule, the pinned texts (interfaces.md, "Schedules").
// Running them is the scheduler's and the run side's (Scheduler, Runs);
// Notify wakes the scheduler after every change.
type Book struct {
	Store BookStore
	// Now is the clock a new schedule's first run is counted from: the
	// scheduler's (nil: the system's).
	Now func() time.Time
	// Zone is AGENT_TZ: the zone of a creator whose profile has none (nil:
	// UTC).
	Zone *time.Location
	// Max is AGENT_MAX_SCHEDULES (0: DefaultMax).
	Max int
	// Profile reads a person's profile (users.info) for their time zone;
	// nil, or an error, skips to Zone.
	Profile func(ctx context.Context, userID string) (pipeline.Profile, error)
	// Notify tells the scheduler the schedules changed; nil: none runs.
	Notify func()
	// NewID makes a new schedule's id (nil: NewID).
	NewID func() string
	Log   *slog.Logger // nil discards
}

// DefaultMax is AGENT_MAX_SCHEDULES's default: schedules per persona
// (interfaces.md, "Schedules").
const DefaultMax = 100

// Ask is a schedule as the model (the add tool's arguments) or a person
// (/schedule's) asks for it; the book adds who and where from the turn.
type Ask struct {
	When   string
	Prompt string
	Target string // "thread" (default where there is a thread) or "channel"
	TZ     string // IANA name; "" is the creator's profile zone, else Book.Zone, else UTC
	Name   string
}

// MaySchedule is the manager, the backup manager, or an approver whose
// scopes are "anything" or name "schedule": a schedule acts on its own
// later, with its creator's authority, where nobody asked. The same rule
// lets a run go on (its creator's role when it runs).
func MaySchedule(a pipeline.Access) bool { return a.HasScope(persona.ScopeSchedule) }

// refusal is an answer that is not a failure: its Message is the one line
// to show.
func refusal(msg string) error { return &pipeline.UserError{Message: msg} }

// Add checks and stores a new schedule made by a, in ev's conversation:
// a thread target is ev's thread, a channel target posts at the root of
// ev's channel (where there is no thread, as for a slash command, the
// channel is the target).
func (b *Book) Add(ctx context.Context, a pipeline.Access, ev *pipeline.Event, r Ask) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgRefused)
	}
	target := Target(strings.ToLower(strings.TrimSpace(r.Target)))
	if target == "" {
		target = TargetThread
		if ev.RootTS() == "" {
			target = TargetChannel
		}
	}
	creator := a.UserID
	if creator == "" {
		creator = ev.UserID
	}
	loc, err := Zone(r.TZ, b.profileZone(ctx, creator, r.TZ), b.Zone)
	if err != nil {
		return "", userError(err)
	}
	sc, err := New(Request{Creator: creator, Channel: ev.ChannelID, ThreadTS: ev.RootTS(),
		Target: target, When: r.When, Prompt: r.Prompt, Name: r.Name}, loc, b.now())
	if err != nil {
		return "", userError(err)
	}
	if b.NewID != nil {
		sc.ID = b.NewID()
	}
	sc, err = b.Store.CreateSchedule(ctx, sc, b.max())
	if errors.Is(err, ErrLimit) {
		return "", refusal(LimitError(b.max()).Error())
	}
	if err != nil {
		return "", err
	}
	b.notify()
	b.log().InfoContext(ctx, "schedule created", "schedule_id", sc.ID, "user_id", creator, "channel", sc.Channel,
		"target", string(sc.Target), "when", sc.When, "tz", sc.TZ)
	msg := fmt.Sprintf(msgCreated, sc.ID, ShowTime(sc.NextRunAt, sc.TZ))
	if sc.Target == TargetChannel {
		msg += msgChannelRoot
	}
	return msg, nil
}

// List says the schedules made in ev's conversation. Those of other
// conversations are counted, not shown: their prompts were said where
// this conversation's people may not read (`agent schedules` lists all).
func (b *Book) List(ctx context.Context, a pipeline.Access, ev *pipeline.Event) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgRefused)
	}
	all, err := b.Store.Schedules(ctx)
	if err != nil {
		return "", err
	}
	var w strings.Builder
	others := 0
	for _, sc := range all {
		if sc.Channel != ev.ChannelID {
			others++
			continue
		}
		if w.Len() == 0 {
			w.WriteString(msgListHead)
		}
		w.WriteString("\n- " + Line(sc))
	}
	if w.Len() == 0 {
		w.WriteString(msgNone)
	}
	if others > 0 {
		fmt.Fprintf(&w, msgOthers, others)
	}
	return w.String(), nil
}

// Remove removes the schedule id, made in ev's conversation: elsewhere it
// is not found, as the lists do not show it, except for the manager and
// the backup manager (`agent schedules remove` is the operator's).
func (b *Book) Remove(ctx context.Context, a pipeline.Access, ev *pipeline.Event, id string) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgRefused)
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return "", refusal(usageUnschedule)
	}
	if !ValidID(id) {
		return "", refusal(fmt.Sprintf(msgNoSuch, quiet(id, maxIDEcho)))
	}
	sc, err := b.Store.Schedule(ctx, id)
	if err == nil && sc.Channel != ev.ChannelID && !a.Managing() {
		err = ErrNotFound
	}
	if err == nil {
		err = b.Store.RemoveSchedule(ctx, id)
	}
	if errors.Is(err, ErrNotFound) {
		return "", refusal(fmt.Sprintf(msgNoSuch, id))
	}
	if err != nil {
		return "", err
	}
	b.notify()
	b.log().InfoContext(ctx, "schedule removed", "schedule_id", id, "user_id", a.UserID, "channel", ev.ChannelID)
	return fmt.Sprintf(msgRemoved, id), nil
}

// Resume runs the paused schedule id again with a's authority: a takes
// it over, and it runs as a from its next due time on (the runs missed
// while it was paused are not caught up). Only in the conversation it was
// made in, where its prompt was written: elsewhere it is not found, as
// the lists do not show it, and nobody adopts a prompt they could not
// read. The answer shows the prompt adopted.
func (b *Book) Resume(ctx context.Context, a pipeline.Access, ev *pipeline.Event, id string) (string, error) {
	if !MaySchedule(a) {
		return "", refusal(msgRefused)
	}
	id = strings.TrimSpace(id)
	if !ValidID(id) {
		return "", refusal(fmt.Sprintf(msgNoSuch, quiet(id, maxIDEcho)))
	}
	sc, err := b.Store.Schedule(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && sc.Channel != ev.ChannelID) {
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
	next := spec.Next(b.now())
	if next.IsZero() {
		return "", refusal(fmt.Sprintf(msgNoRunLeft, id, id))
	}
	creator := a.UserID
	if creator == "" {
		creator = ev.UserID
	}
	resumed, err := b.Store.ResumeSchedule(ctx, id, creator, next)
	if errors.Is(err, ErrNotFound) {
		return "", refusal(fmt.Sprintf(msgNoSuch, id))
	}
	if err != nil {
		return "", err
	}
	if !resumed { // resumed meanwhile, by someone else
		return "", refusal(fmt.Sprintf(msgNotPaused, id))
	}
	b.notify()
	b.log().InfoContext(ctx, "schedule resumed", "schedule_id", id, "user_id", creator, "was_creator", sc.Creator,
		"channel", ev.ChannelID, "next", next)
	sc.Creator, sc.Paused, sc.NextRunAt = creator, false, next
	return fmt.Sprintf(msgResumed, creator, Line(sc)), nil
}

func (b *Book) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}

func (b *Book) max() int {
	if b.Max == 0 {
		return DefaultMax
	}
	return b.Max
}

func (b *Book) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}

func (b *Book) notify() {
	if b.Notify != nil {
		b.Notify()
	}
}

// profileZone is the creator's profile time zone, "" when tz is given,
// when there is no profile reader or the platform does not answer.
func (b *Book) profileZone(ctx context.Context, userID, tz string) string {
	if strings.TrimSpace(tz) != "" || b.Profile == nil || userID == "" {
		return ""
	}
	p, err := b.Profile(ctx, userID)
	if err != nil {
		b.log().DebugContext(ctx, "profile time zone", "user_id", userID, "err", err)
		return ""
	}
	return p.TimeZone
}

// userError is err as the one line to show when it is about the
// request (ErrInvalid), else err.
func userError(err error) error {
	if errors.Is(err, ErrInvalid) {
		return &pipeline.UserError{Message: err.Error()}
	}
	return err
}
