package schedule

import "time"

// DefaultCatchUp is AGENT_SCHEDULE_CATCHUP's default: a run missed by at
// most an hour (a deploy, a restart, a short outage) still runs once;
// older ones would post stale news.
const DefaultCatchUp = time.Hour

// maxCounted bounds the missed due times CatchUp counts one by one: an
// every-minute cron expression down for a year is half a million steps of
// robfig/cron's walk. Past it, the count stops (Missed is a floor).
const maxCounted = 10000

// Plan is what to do with a schedule found due.
type Plan struct {
	// Run is the due time to run now, the latest that is due, when it was
	// missed by at most the catch-up window; zero: none.
	Run time.Time
	// Missed counts the due times skipped: older than the window, or
	// older than Run.
	Missed int
	// Next is the first due time after now; zero: none (a one-off that
	// came).
	Next time.Time
}

// CatchUp plans a schedule whose stored next run is due, at now: of the
// due times up to now, the latest runs once if now is at most window past
// it; the others are skipped and counted. A due time in the future plans
// nothing but Next. window is at least a minute in practice (config): a
// run the timer finds a few milliseconds late is not a missed one.
func CatchUp(spec *Spec, due, now time.Time, window time.Duration) Plan {
	var p Plan
	if due.After(now) {
		p.Next = due
		return p
	}
	start := now.Add(-window)
	t := due
	for t.Before(start) { // before the window: skipped
		p.Missed++
		if p.Missed >= maxCounted {
			t = spec.Next(start.Add(-time.Nanosecond)) // the first due time in the window
		} else {
			t = spec.Next(t)
		}
		if t.IsZero() {
			return p
		}
	}
	if t.After(now) {
		p.Next = t
		return p
	}
	for { // in the window: the latest runs
		next := spec.Next(t)
		if next.IsZero() || next.After(now) {
			p.Run, p.Next = t, next
			return p
		}
		p.Missed++
		t = next
	}
}
