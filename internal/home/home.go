// Package home is the persona's App Home tab: what it does for the person
// who opens it — their recent threads with it, their schedules, the
// memories they asked for, their connected accounts — and, for the
// manager and the backup, today's spend against each budget, the cards
// waiting, each channel's permission mode and the mutes in force. Its
// buttons (remove a schedule, forget a memory, disconnect an account,
// lift a mute) act through the features' own rules, as their commands do,
// authorised by who clicked, never by whom the view was published for;
// the view is rebuilt on open and after each click. It reaches the store,
// the features and the chat through the small interfaces below.
package home

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/budget"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Store is what the view reads.
type Store interface {
	ThreadsOf(ctx context.Context, userID string, limit int) ([]store.PersonThread, error)
	Schedules(ctx context.Context) ([]schedule.Schedule, error)
	Schedule(ctx context.Context, id string) (schedule.Schedule, error)
	MemoriesBy(ctx context.Context, author string) ([]memory.Memory, error)
	Memory(ctx context.Context, id string) (memory.Memory, error)
	PendingApprovals(ctx context.Context) ([]store.Approval, error)
	ChannelModes(ctx context.Context) ([]store.ChannelMode, error)
	Mutes(ctx context.Context, now time.Time) ([]store.Mute, error)
	RemoveIgnore(ctx context.Context, kind, target string, now time.Time) (bool, error)
}

// Schedules removes a schedule with the rule of /unschedule
// (*schedule.Book).
type Schedules interface {
	Remove(ctx context.Context, a pipeline.Access, ev *pipeline.Event, id string) (string, error)
}

// Memory forgets a memory with the rule of /forget (memory.Commands).
type Memory interface {
	Forget(ctx context.Context, a pipeline.Access, channel, id string) (string, error)
}

// Spend is today's spend against the budgets (*budget.Guard).
type Spend interface {
	Today(ctx context.Context, max int) (budget.Today, error)
}

// Connections are a person's connected accounts (the tool servers used
// with their own account): listed and disconnected, as /connections and
// /disconnect do. Nil: the view has no such section.
type Connections interface {
	List(ctx context.Context, userID string) ([]Connection, error)
	// Disconnect says what it did as /disconnect does ("disconnected
	// from <server>", "not connected to <server>").
	Disconnect(ctx context.Context, userID, server string) (string, error)
}

// Connection is one connected account.
type Connection struct {
	Server, Account string
}

// The buttons' action ids.
const (
	ActionRemoveSchedule = "home_remove_schedule"
	ActionForgetMemory   = "home_forget_memory"
	ActionDisconnect     = "home_disconnect"
	ActionLiftMute       = "home_lift_mute"
)

// IsAction reports whether actionID is a button of the view.
func IsAction(actionID string) bool { return strings.HasPrefix(actionID, "home_") }

// maxItems is the most items a section lists: eight sections of a title,
// nine lines and a count stay within the platform's 100 blocks.
const maxItems = 9

// Home builds and publishes the views and runs their buttons.
type Home struct {
	Store     Store
	Schedules Schedules
	Memory    Memory
	// Spend, when set, gives the managers' view today's spend.
	Spend Spend
	// Connections, when set, adds the person's connected accounts.
	Connections Connections
	// Access is who a person is to the persona (persona.Access).
	Access func(userID string) pipeline.Access
	// Blocked reports a person the persona does not serve: nothing is
	// published for them.
	Blocked func(userID string) bool
	// DefaultMode is the mode of a channel without one of its own.
	DefaultMode pipeline.Mode
	Chat        pipeline.HomePublisher
	Now         func() time.Time
	Log         *slog.Logger
}

// Opened publishes userID's view (app_home_opened, tab home).
func (h *Home) Opened(ctx context.Context, userID string) error {
	if userID == "" || h.Blocked != nil && h.Blocked(userID) {
		return nil
	}
	return h.publish(ctx, userID, "")
}

// Click runs userID's click on a button of the view (actionID, value),
// with userID's own authority whatever view it was in, and publishes
// their view again with the answer on top.
func (h *Home) Click(ctx context.Context, userID, actionID, value string) error {
	if userID == "" || h.Blocked != nil && h.Blocked(userID) {
		return nil
	}
	notice, err := h.act(ctx, h.Access(userID), actionID, strings.TrimSpace(value))
	if err != nil {
		return err
	}
	return h.publish(ctx, userID, notice)
}

func (h *Home) publish(ctx context.Context, userID, notice string) error {
	v, err := h.View(ctx, userID)
	if err != nil {
		return err
	}
	v.Notice = notice
	return h.Chat.PublishHome(ctx, userID, v)
}

// act runs one button through its feature's rule; the answer is the
// feature's own text (a refusal included).
func (h *Home) act(ctx context.Context, a pipeline.Access, actionID, value string) (string, error) {
	switch actionID {
	case ActionRemoveSchedule:
		// In the conversation it was made in for its creator (where the
		// command would find it); elsewhere only a manager may.
		ev := &pipeline.Event{UserID: a.UserID}
		if sc, err := h.Store.Schedule(ctx, value); err == nil && sc.Creator == a.UserID {
			ev.ChannelID = sc.Channel
		}
		text, err := h.Schedules.Remove(ctx, a, ev, value)
		return answer(text, err)
	case ActionForgetMemory:
		channel := ""
		if m, err := h.Store.Memory(ctx, value); err == nil && m.Author == a.UserID {
			channel = m.Channel
		}
		return h.Memory.Forget(ctx, a, channel, value)
	case ActionDisconnect:
		if h.Connections == nil {
			return "connections are not available here", nil
		}
		return h.Connections.Disconnect(ctx, a.UserID, value)
	case ActionLiftMute:
		if !a.Privileged() {
			return msgUnignoreRefused, nil
		}
		kind, target, ok := strings.Cut(value, " ")
		if !ok {
			return "no such mute", nil
		}
		lifted, err := h.Store.RemoveIgnore(ctx, kind, target, h.Now())
		if err != nil {
			return "", err
		}
		if !lifted {
			return "no such mute", nil
		}
		h.Log.InfoContext(ctx, "mute lifted from the home tab", "kind", kind, "user_id", a.UserID)
		return "mute lifted: " + muteTarget(kind, target), nil
	}
	return "", fmt.Errorf("home: unknown action %q", actionID)
}

// msgUnignoreRefused is the mute commands' refusal (internal/commands).
const msgUnignoreRefused = "only manager or approver can ignore"

// answer is a feature's answer as the notice: its refusal's words, or
// its text.
func answer(text string, err error) (string, error) {
	var ue *pipeline.UserError
	switch {
	case err == nil:
		return text, nil
	case asUserError(err, &ue):
		return ue.Message, nil
	}
	return "", err
}
