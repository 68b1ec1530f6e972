package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// MuteStore keeps the mutes of /ignore and /ignore-thread (*store.Store);
// the drop stage reads them (pipeline.Mutes).
type MuteStore interface {
	SetIgnore(ctx context.Context, kind, target, by string, until time.Time) error
	RemoveIgnore(ctx context.Context, kind, target string, now time.Time) (bool, error)
}

// Texts of the mute commands, the original runtime's (interfaces.md).
const (
	msgIgnoreRefused  = "only manager or approver can ignore"
	msgBadDuration    = "duration must be like 30m, 2h or 1d"
	msgLongDuration   = "duration cannot exceed 7d"
	msgIgnoreUsage    = "usage: /ignore <@U…> [30m|2h|1d]"
	msgUnignoreUsage  = "usage: /unignore <@U…>"
	msgIgnoreManagers = "the manager and the backup manager cannot be ignored"
)

// maxMute is the longest mute: a longer one is forgotten, not a pause.
const maxMute = 7 * 24 * time.Hour

// parseMuteDuration reads "30m", "2h", "1d": a whole number of minutes,
// hours or days, at most 7 days.
func parseMuteDuration(s string) (time.Duration, error) {
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}
	if len(s) < 2 {
		return 0, fmt.Errorf("%s", msgBadDuration)
	}
	u, ok := unit[s[len(s)-1]]
	n, err := strconv.Atoi(s[:len(s)-1])
	if !ok || err != nil || n <= 0 || s[0] == '+' {
		return 0, fmt.Errorf("%s", msgBadDuration)
	}
	if int64(n) > int64(maxMute/u) {
		return 0, fmt.Errorf("%s", msgLongDuration)
	}
	return time.Duration(n) * u, nil
}

// ignore runs /ignore, /ignore-thread, /unignore and /unignore-thread.
// Muting takes a role (the manager, the backup manager, approvers): it
// silences others. The slash form of /ignore-thread mutes the channel.
func (c *Commands) ignore(ctx context.Context, ev *pipeline.Event, a pipeline.Access, name, key, args string, out pipeline.Outbox) error {
	if !a.Privileged() {
		return c.refuse(ctx, ev, name, key, out, msgIgnoreRefused)
	}
	if c.Mutes == nil {
		return say(ctx, out, "muting is not available here")
	}
	words := strings.Fields(args)
	where := "this thread"
	if key == pipeline.ThreadKey(ev.ChannelID, "") && !ev.IsDM() {
		where = "this channel"
	}
	switch name {
	case "/ignore-thread":
		if len(words) > 1 {
			return say(ctx, out, "usage: /ignore-thread [30m|2h|1d]")
		}
		d, err := muteFor(words)
		if err != nil {
			return say(ctx, out, err.Error())
		}
		if err := c.Mutes.SetIgnore(ctx, store.IgnoreThread, key, ev.UserID, c.until(d)); err != nil {
			return err
		}
		return say(ctx, out, "ignoring "+where+lasting(d, "`/unignore-thread`"))
	case "/unignore-thread":
		if _, err := c.Mutes.RemoveIgnore(ctx, store.IgnoreThread, key, c.now()); err != nil {
			return err
		}
		return say(ctx, out, "stopped ignoring "+where)
	}
	if len(words) == 0 || mentioned(words[0]) == "" || name == "/unignore" && len(words) > 1 || len(words) > 2 {
		if name == "/unignore" {
			return say(ctx, out, msgUnignoreUsage)
		}
		return say(ctx, out, msgIgnoreUsage)
	}
	who := mentioned(words[0])
	if name == "/unignore" {
		if _, err := c.Mutes.RemoveIgnore(ctx, store.IgnoreUser, who, c.now()); err != nil {
			return err
		}
		return say(ctx, out, fmt.Sprintf("stopped ignoring <@%s>", who))
	}
	if c.Persona != nil && c.Persona.IsManager(who) {
		return c.refuse(ctx, ev, name, key, out, msgIgnoreManagers)
	}
	d, err := muteFor(words[1:])
	if err != nil {
		return say(ctx, out, err.Error())
	}
	if err := c.Mutes.SetIgnore(ctx, store.IgnoreUser, who, ev.UserID, c.until(d)); err != nil {
		return err
	}
	return say(ctx, out, fmt.Sprintf("ignoring <@%s>%s", who, lasting(d, fmt.Sprintf("`/unignore <@%s>`", who))))
}

// now is the service's clock (Commands.Now; nil: the system's).
func (c *Commands) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// until is when a mute of d ends; zero (until lifted) for 0.
func (c *Commands) until(d time.Duration) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return c.now().Add(d)
}

// muteFor reads the optional duration word: none mutes until lifted.
func muteFor(words []string) (time.Duration, error) {
	if len(words) == 0 {
		return 0, nil
	}
	return parseMuteDuration(strings.ToLower(words[0]))
}

// lasting says how long a mute holds and what lifts it.
func lasting(d time.Duration, lift string) string {
	if d == 0 {
		return " until " + lift
	}
	return " for " + formatMute(d) + " (" + lift + " lifts it sooner)"
}

// formatMute writes a mute's duration as it was given: 30m, 2h, 1d.
func formatMute(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}

// mentioned is the user id of a mention word (<@U…> or <@U…|name>), ""
// for anything else.
func mentioned(word string) string {
	inner, ok := strings.CutPrefix(word, "<@")
	if !ok {
		return ""
	}
	inner, ok = strings.CutSuffix(inner, ">")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(inner, "|")
	if len(id) < 2 || (id[0] != 'U' && id[0] != 'W') {
		return ""
	}
	for _, r := range id {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return ""
		}
	}
	return id
}
