package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinInterval is the shortest gap between two runs of a recurring
// schedule: a persona that posts more often than once a minute is a
// flood, not a schedule (and cron's own resolution is the minute).
const MinInterval = time.Minute

// ErrInvalid matches every error about what a person asked for (Parse,
// New, Zone): its text is one line meant for them, unlike a store's.
var ErrInvalid = errors.New("invalid schedule")

// ErrLimit matches the error of a persona that has AGENT_MAX_SCHEDULES
// schedules already (the store's create, LimitError); it matches
// ErrInvalid too.
var ErrLimit = errors.New("too many schedules")

// invalid is an error about a person's input; it matches ErrInvalid, and
// also when set.
type invalid struct {
	text string
	also error
}

func (e *invalid) Error() string { return e.text }
func (e *invalid) Is(target error) bool {
	return target == ErrInvalid || e.also != nil && target == e.also
}

// LimitError is the refusal of a schedule past max per persona.
func LimitError(max int) error {
	return &invalid{text: fmt.Sprintf("too many cron jobs: at most %d per persona (AGENT_MAX_SCHEDULES); remove one first", max), also: ErrLimit}
}

func invalidf(format string, args ...any) error {
	return &invalid{text: fmt.Sprintf(format, args...)}
}

// badWhen is the pinned error of a `when` that does not parse
// (interfaces.md, "Schedules").
func badWhen(format string, args ...any) error {
	return invalidf("invalid cron expression: "+format, args...)
}

// Spec is a parsed `when`: the times a schedule is due.
type Spec struct {
	when  string
	loc   *time.Location
	cron  *cron.SpecSchedule // a cron expression or a descriptor but @every
	every time.Duration      // @every, counted from anchor
	at    time.Time          // a one-off: in <duration>, RFC 3339
	// anchor is the schedule's creation: @every's runs are anchor + k·every,
	// so a stored schedule is due at the same times at every start.
	anchor time.Time
}

// parser is robfig/cron's standard parser: minute, hour, day of month,
// month, day of week, and the descriptors (@hourly, @daily, @weekly,
// @monthly, @yearly, @midnight; @every is read here, see Parse).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// cronHorizon is how far robfig/cron looks for a next run before it gives
// up (it returns the zero time past five years): an expression with no run
// within it (February 30th) never runs.
const cronHorizon = 5

// Parse reads when in loc. created is the schedule's creation time: the
// origin of `in <duration>` and of @every's runs, so that a stored
// schedule parses to the same times at every start. Parse checks only the
// form; New checks a new schedule against the clock (a time in the past,
// too frequent). Its errors match ErrInvalid and read
// `invalid cron expression: <why>`.
func Parse(when string, loc *time.Location, created time.Time) (*Spec, error) {
	if loc == nil {
		loc = time.UTC
	}
	w := strings.Join(strings.Fields(when), " ")
	s := &Spec{when: w, loc: loc, anchor: milli(created)}
	switch {
	case w == "":
		return nil, badWhen("empty (want a cron expression like \"0 9 * * 1-5\", @daily, @every 1h, in 30m or an RFC 3339 time)")
	case strings.HasPrefix(w, "in "):
		d, err := time.ParseDuration(strings.TrimPrefix(w, "in "))
		if err != nil {
			return nil, badWhen("%q: want a duration like 30m or 2h", w)
		}
		s.at = milli(created.Add(d))
		return s, nil
	case strings.HasPrefix(w, "@every"):
		arg := strings.TrimSpace(strings.TrimPrefix(w, "@every"))
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return nil, badWhen("%q: want @every and a positive duration like 15m or 1h", w)
		}
		s.every = d.Truncate(time.Second) // robfig/cron's @every does the same
		if s.every == 0 {
			return nil, badWhen("%q: want @every and a positive duration like 15m or 1h", w)
		}
		return s, nil
	case strings.HasPrefix(w, "TZ=") || strings.HasPrefix(w, "CRON_TZ="):
		return nil, badWhen("%q: give the time zone as tz, not in the expression", w)
	case !strings.Contains(w, " ") && !strings.HasPrefix(w, "@"):
		at, err := time.Parse(time.RFC3339, w)
		if err != nil {
			return nil, badWhen("%q: neither a 5-field cron expression nor an RFC 3339 time like 2026-03-02T09:00:00+01:00", w)
		}
		s.at = milli(at)
		return s, nil
	}
	sched, err := parser.Parse(w)
	if err != nil {
		return nil, badWhen("%s", cronReason(err))
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok { // the parser returns a ConstantDelaySchedule only for @every
		return nil, badWhen("%q: unsupported form", w)
	}
	spec.Location = loc
	s.cron = spec
	if s.Next(created).IsZero() {
		return nil, badWhen("%q never comes (no such day within %d years)", w, cronHorizon)
	}
	return s, nil
}

// milli is t to the millisecond, as the store keeps times: a due time
// read back must equal the one computed.
func milli(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).In(t.Location()) }

// cronReason is robfig/cron's error without the Go noise it wraps
// (strconv's "strconv.Atoi: parsing …: invalid syntax").
func cronReason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": strconv."); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// When is the expression as given (spaces collapsed).
func (s *Spec) When() string { return s.when }

// Location is the time zone the expression is read in.
func (s *Spec) Location() *time.Location { return s.loc }

// Once reports whether the schedule runs one time only (in <duration>, an
// RFC 3339 time).
func (s *Spec) Once() bool { return s.cron == nil && s.every == 0 }

// Next is the first due time strictly after after, in the schedule's
// zone, or the zero time when there is none (a one-off that has come, a
// cron expression with no day within robfig/cron's five years).
//
// A cron expression's wall-clock times are taken as they come in its zone,
// except across daylight-saving changes, which robfig/cron gets wrong both
// ways (dst.go): a time a spring-forward skips runs once, at the end of
// the gap (02:30 on the day clocks go from 02:00 to 03:00 runs at 03:00),
// and a time a fall-back repeats runs once, the first time (unless the
// hour field is *: `0 * * * *` runs every real hour, the repeated one too).
func (s *Spec) Next(after time.Time) time.Time {
	switch {
	case s.cron != nil:
		return s.cronNext(after)
	case s.every > 0:
		if after.Before(s.anchor) {
			return s.anchor.Add(s.every).In(s.loc)
		}
		k := after.Sub(s.anchor)/s.every + 1
		return s.anchor.Add(k * s.every).In(s.loc)
	case s.at.After(after):
		return s.at.In(s.loc)
	}
	return time.Time{}
}

// minGap is the shortest gap between the next n runs after from; 0 when
// there are fewer than two.
func (s *Spec) minGap(from time.Time, n int) time.Duration {
	var gap time.Duration
	prev := s.Next(from)
	for i := 1; i < n && !prev.IsZero(); i++ {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		if d := next.Sub(prev); gap == 0 || d < gap {
			gap = d
		}
		prev = next
	}
	return gap
}
