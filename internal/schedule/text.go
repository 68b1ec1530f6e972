package schedule

import (
	"fmt"
	"strings"
	"time"
)

// What people read of the schedules. The answers are pinned
// (interfaces.md, "Schedules": the original runtime's cron job answers),
// and every answer in chat calls a schedule a "cron job" as they do; the
// commands, the tools, the manifest and the CLI call it a schedule.
const (
	msgRefused     = "only manager or approver can schedule work"
	msgCreated     = "cron job created: %s, next run %s"
	msgChannelRoot = " (posts at the channel root)"
	msgListHead    = "Active cron jobs:"
	msgNone        = "No cron jobs."
	msgRemoved     = "cron job %s removed"
	msgNoSuch      = "no cron job %s"
	// Not pinned: what the original runtime did not have (other
	// conversations' cron jobs kept apart, the pause and the resume).
	msgOthers    = "\n(%d more made in other conversations, not shown here)"
	msgResumed   = "cron job resumed, running as <@%s> from now on: %s"
	msgNotPaused = "cron job %s is not paused"
	msgNoRunLeft = "cron job %s has no run left: `/unschedule %s` removes it"
	// msgUnavailable answers the commands and the tools where no book is
	// wired.
	msgUnavailable = "Cron jobs are not available here."

	usageSchedule   = `usage: /schedule "<when>" "<prompt>" [channel]`
	usageUnschedule = "usage: /unschedule <id>"
)

// ShowTime is t in the zone tz, unambiguous: "2026-11-30 09:00
// Europe/Berlin" (seconds only when set: a one-off `in 90s`).
func ShowTime(t time.Time, tz string) string {
	if t.IsZero() {
		return "none"
	}
	loc, err := LoadZone(tz)
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
func Line(sc Schedule) string {
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

// rootText is the top-level message a channel run answers under, its
// words' special mentions (<!channel>, <!here>) broken: the runtime posts
// it, and it pings nobody.
func rootText(sc Schedule) string {
	if sc.Name != "" {
		return "Scheduled: " + Unbroadcast(sc.Name)
	}
	return "Scheduled: " + Unbroadcast(sc.Prompt)
}

// pausedText tells the manager that a schedule was paused, why, and what
// they can do: a paused schedule runs again only once someone who may
// schedule work resumes it (then as them), or it is removed. Its name's
// special mentions are broken: the notice pings the manager alone.
func pausedText(manager string, sc Schedule, why string) string {
	who := ""
	if manager != "" {
		who = "<@" + manager + "> "
	}
	label := sc.ID
	if sc.Name != "" {
		label += " (" + Unbroadcast(sc.Name) + ")"
	}
	return fmt.Sprintf("%scron job %s paused: %s. "+
		"`/schedule resume %s` here runs it again as you; `/unschedule %s` removes it", who, label, why, sc.ID, sc.ID)
}
