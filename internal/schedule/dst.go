package schedule

import "time"

// starBit is robfig/cron's mark of a field given as * (cron/spec.go's
// unexported starBit: the top bit of the field's bit set).
const starBit = 1 << 63

// cronNext is robfig/cron's next run, corrected for daylight-saving
// changes. robfig/cron walks wall-clock fields in the zone, so
//   - on a spring-forward day, a time in the skipped hour never matches
//     and the run is lost until the next day: here it runs at the end of
//     the gap (the first instant that exists after it), once however many
//     of the skipped minutes the expression names;
//   - on a fall-back day, a time in the repeated hour matches twice: here
//     the second is skipped, unless the hour field is * (an hourly
//     schedule runs every real hour).
func (s *Spec) cronNext(after time.Time) time.Time {
	from := after.In(s.loc)
	for {
		next := s.cron.Next(from)
		if next.IsZero() {
			return next
		}
		next = next.In(s.loc)
		if gap := s.gapRun(from, next); !gap.IsZero() {
			return gap
		}
		if s.cron.Hour&starBit == 0 && repeated(next) {
			from = next
			continue
		}
		return next
	}
}

// gapRun is the end of the first spring-forward gap in (from, to] that
// skipped a wall-clock minute the expression names, or the zero time.
func (s *Spec) gapRun(from, to time.Time) time.Time {
	cur := from
	for {
		_, end := cur.ZoneBounds()
		if end.IsZero() || end.After(to) {
			return time.Time{}
		}
		end = end.In(s.loc)
		_, before := cur.Zone()
		_, after := end.Zone()
		if after > before && s.matchesWall(end, before, after) {
			return end
		}
		cur = end
	}
}

// matchesWall reports whether the expression names a minute of the wall
// clock skipped at the transition end, where the zone's offset went from
// before to after (seconds east of UTC).
func (s *Spec) matchesWall(end time.Time, before, after int) bool {
	// Wall-clock readings as UTC times: their fields are the zone's.
	from := end.Add(time.Duration(before) * time.Second).UTC()
	to := end.Add(time.Duration(after) * time.Second).UTC()
	for w := from.Truncate(time.Minute); w.Before(to); w = w.Add(time.Minute) {
		if !w.Before(from) && s.matches(w) {
			return true
		}
	}
	return false
}

// matches reports whether the wall-clock minute w (its fields read as
// they are) is one the expression names; the standard parser fixes the
// second at 0.
func (s *Spec) matches(w time.Time) bool {
	c := s.cron
	if 1<<uint(w.Month())&c.Month == 0 || 1<<uint(w.Hour())&c.Hour == 0 || 1<<uint(w.Minute())&c.Minute == 0 {
		return false
	}
	// robfig/cron's dayMatches: with either day field a *, both must
	// match; with both restricted, either (cron's traditional rule).
	dom := 1<<uint(w.Day())&c.Dom > 0
	dow := 1<<uint(w.Weekday())&c.Dow > 0
	if c.Dom&starBit > 0 || c.Dow&starBit > 0 {
		return dom && dow
	}
	return dom || dow
}

// repeated reports whether t's wall-clock reading came once already: t
// lies in the hour (or half hour) a fall-back repeats, after its first
// pass.
func repeated(t time.Time) bool {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, now := t.Zone()
	_, before := start.Add(-time.Nanosecond).In(t.Location()).Zone()
	back := time.Duration(before-now) * time.Second
	return back > 0 && t.Sub(start) < back
}
