package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("tz database: %v", err)
	}
	return loc
}

func mustParse(t *testing.T, when string, loc *time.Location, created time.Time) *Spec {
	t.Helper()
	s, err := Parse(when, loc, created)
	if err != nil {
		t.Fatalf("Parse(%q): %v", when, err)
	}
	return s
}

// runs lists the next n due times after from, in UTC RFC 3339.
func runs(s *Spec, from time.Time, n int) []string {
	var out []string
	for t := from; len(out) < n; {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t.UTC().Format(time.RFC3339))
	}
	return out
}

func sameRuns(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("runs %v, want %v", got, want)
		}
	}
}

// Every form of `when` (interfaces.md, "Schedules"), read in its zone.
func TestParseForms(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	created := time.Date(2026, 1, 5, 8, 30, 0, 0, time.UTC) // a Monday, 09:30 in Berlin
	for _, tt := range []struct {
		name, when string
		loc        *time.Location
		once       bool
		want       []string
	}{
		{"cron weekdays at 9 in Berlin", "0 9 * * 1-5", berlin, false,
			[]string{"2026-01-06T08:00:00Z", "2026-01-07T08:00:00Z", "2026-01-08T08:00:00Z", "2026-01-09T08:00:00Z", "2026-01-12T08:00:00Z"}},
		{"cron in UTC", "*/15 9 * * *", time.UTC, false,
			[]string{"2026-01-05T09:00:00Z", "2026-01-05T09:15:00Z", "2026-01-05T09:30:00Z"}},
		{"spaces collapse", "  0   9  * * 1-5 ", berlin, false, []string{"2026-01-06T08:00:00Z"}},
		{"@hourly", "@hourly", berlin, false, []string{"2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z"}},
		{"@daily at the zone's midnight", "@daily", berlin, false, []string{"2026-01-05T23:00:00Z", "2026-01-06T23:00:00Z"}},
		{"@weekly on Sunday's midnight", "@weekly", berlin, false, []string{"2026-01-10T23:00:00Z", "2026-01-17T23:00:00Z"}},
		{"@every from the creation", "@every 90m", berlin, false, []string{"2026-01-05T10:00:00Z", "2026-01-05T11:30:00Z", "2026-01-05T13:00:00Z"}},
		{"@every a minute", "@every 1m", time.UTC, false, []string{"2026-01-05T08:31:00Z", "2026-01-05T08:32:00Z"}},
		{"in a duration", "in 3s", berlin, true, []string{"2026-01-05T08:30:03Z"}},
		{"in hours", "in 2h30m", time.UTC, true, []string{"2026-01-05T11:00:00Z"}},
		{"RFC 3339 with an offset", "2026-02-01T09:00:00+01:00", time.UTC, true, []string{"2026-02-01T08:00:00Z"}},
		{"RFC 3339 in UTC", "2026-02-01T09:00:00Z", berlin, true, []string{"2026-02-01T09:00:00Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.when, tt.loc, created)
			if s.Once() != tt.once {
				t.Errorf("Once = %v, want %v", s.Once(), tt.once)
			}
			sameRuns(t, runs(s, created, len(tt.want)+1)[:len(tt.want)], tt.want)
			if tt.once && len(runs(s, created, 3)) != 1 {
				t.Errorf("a one-off runs %v", runs(s, created, 3))
			}
			if got := s.Next(created); got.Location() != tt.loc {
				t.Errorf("Next in %v, want the schedule's zone %v", got.Location(), tt.loc)
			}
		})
	}
}

// @every's runs are counted from the creation, whatever time Next is
// asked from: a stored schedule parsed again is due at the same times.
func TestEveryAnchored(t *testing.T) {
	created := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	s := mustParse(t, "@every 90m", time.UTC, created)
	for _, tt := range []struct{ after, want string }{
		{"2026-01-05T09:00:00Z", "2026-01-05T11:30:00Z"},
		{"2026-01-05T11:30:00Z", "2026-01-05T13:00:00Z"},
		{"2026-01-05T12:00:00Z", "2026-01-05T13:00:00Z"},
		{"2026-01-06T10:00:00Z", "2026-01-06T11:30:00Z"}, // 24h is 16 runs
		{"2026-01-06T11:29:59Z", "2026-01-06T11:30:00Z"},
	} {
		after, _ := time.Parse(time.RFC3339, tt.after)
		if got := s.Next(after).UTC().Format(time.RFC3339); got != tt.want {
			t.Errorf("Next(%s) = %s, want %s", tt.after, got, tt.want)
		}
	}
}

// A bad `when` is one line: the pinned `invalid cron expression: <why>`.
func TestParseErrors(t *testing.T) {
	created := time.Date(2026, 1, 5, 8, 30, 0, 0, time.UTC)
	for _, tt := range []struct{ when, want string }{
		{"", `invalid cron expression: empty (want a cron expression like "0 9 * * 1-5", @daily, @every 1h, in 30m or an RFC 3339 time)`},
		{"every monday", `invalid cron expression: expected exactly 5 fields, found 2: [every monday]`},
		{"* * * *", `invalid cron expression: expected exactly 5 fields, found 4: [* * * *]`},
		{"0 0 9 * * 1", `invalid cron expression: expected exactly 5 fields, found 6: [0 0 9 * * 1]`},
		{"61 * * * *", `invalid cron expression: end of range (61) above maximum (59): 61`},
		{"x 9 * * *", `invalid cron expression: failed to parse int from x`},
		{"0 9 * * mon-xyz", `invalid cron expression: failed to parse int from xyz`},
		{"0 0 30 2 *", `invalid cron expression: "0 0 30 2 *" never comes (no such day within 5 years)`},
		{"@fortnightly", `invalid cron expression: unrecognized descriptor: @fortnightly`},
		{"@every", `invalid cron expression: "@every": want @every and a positive duration like 15m or 1h`},
		{"@every soon", `invalid cron expression: "@every soon": want @every and a positive duration like 15m or 1h`},
		{"@every -5m", `invalid cron expression: "@every -5m": want @every and a positive duration like 15m or 1h`},
		{"in 5 minutes", `invalid cron expression: "in 5 minutes": want a duration like 30m or 2h`},
		{"in 2d", `invalid cron expression: "in 2d": want a duration like 30m or 2h`},
		{"tomorrow", `invalid cron expression: "tomorrow": neither a 5-field cron expression nor an RFC 3339 time like 2026-03-02T09:00:00+01:00`},
		{"2026-02-01T09:00:00", `invalid cron expression: "2026-02-01T09:00:00": neither a 5-field cron expression nor an RFC 3339 time like 2026-03-02T09:00:00+01:00`},
		{"CRON_TZ=Europe/Berlin 0 9 * * *", `invalid cron expression: "CRON_TZ=Europe/Berlin 0 9 * * *": give the time zone as tz, not in the expression`},
	} {
		t.Run(tt.when, func(t *testing.T) {
			_, err := Parse(tt.when, time.UTC, created)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Parse(%q) = %v\nwant %s", tt.when, err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not match ErrInvalid", err)
			}
		})
	}
}

// What robfig/cron does across daylight-saving changes, which dst.go
// corrects: it loses a run a spring-forward skips, and runs twice one a
// fall-back repeats. Should a release fix either, this test says so and
// dst.go can go.
func TestRobfigDST(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	raw, err := cron.ParseStandard("30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	raw.(*cron.SpecSchedule).Location = berlin
	spring := raw.Next(time.Date(2026, 3, 28, 12, 0, 0, 0, berlin))
	if want := time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC); !spring.Equal(want) {
		t.Errorf("robfig/cron on the spring-forward day: %v, want the next day's %v (the lost run)", spring.UTC(), want)
	}
	first := raw.Next(time.Date(2026, 10, 24, 12, 0, 0, 0, berlin))
	second := raw.Next(first)
	if want := first.Add(time.Hour); !second.Equal(want) {
		t.Errorf("robfig/cron on the fall-back day: %v then %v, want the repeat an hour later", first.UTC(), second.UTC())
	}
}

// Daylight-saving changes: a time a spring-forward skips runs once, at the
// end of the gap; a time a fall-back repeats runs once, the first time;
// a schedule whose hour is * runs every real hour.
func TestDST(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")         // 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET
	newYork := zone(t, "America/New_York")     // 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST
	lordHowe := zone(t, "Australia/Lord_Howe") // 2026-10-04 02:00 -> 02:30 (+10:30 -> +11)
	for _, tt := range []struct {
		name, when string
		loc        *time.Location
		from       time.Time
		want       []string
	}{
		{"spring forward: 02:30 runs at 03:00 once", "30 2 * * *", berlin, time.Date(2026, 3, 27, 12, 0, 0, 0, berlin),
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"spring forward: every 20 minutes of hour 2, once at 03:00", "*/20 2 * * *", berlin, time.Date(2026, 3, 29, 0, 0, 0, 0, berlin),
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:20:00Z"}},
		{"spring forward: 02:00 and 03:00 both named run at 03:00 once", "0 2,3 * * *", berlin, time.Date(2026, 3, 29, 0, 0, 0, 0, berlin),
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T01:00:00Z"}},
		{"spring forward: a quarter-hourly schedule goes on at 03:00", "*/15 * * * *", berlin, time.Date(2026, 3, 29, 1, 30, 0, 0, berlin),
			[]string{"2026-03-29T00:45:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"}},
		{"spring forward: a day that does not match is not run", "30 2 * * 1", berlin, time.Date(2026, 3, 28, 12, 0, 0, 0, berlin),
			[]string{"2026-03-30T00:30:00Z"}},
		{"spring forward in New York", "30 2 * * *", newYork, time.Date(2026, 3, 7, 12, 0, 0, 0, newYork),
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"a half-hour gap: 02:15 runs at 02:30", "15 2 * * *", lordHowe, time.Date(2026, 10, 3, 12, 0, 0, 0, lordHowe),
			[]string{"2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
		{"fall back: 02:30 runs once, the first time", "30 2 * * *", berlin, time.Date(2026, 10, 24, 12, 0, 0, 0, berlin),
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"fall back: every 10 minutes of hour 2 runs each once", "*/10 2 * * *", berlin, time.Date(2026, 10, 25, 0, 45, 0, 0, time.UTC), // 02:45 CEST
			[]string{"2026-10-25T00:50:00Z", "2026-10-26T01:00:00Z"}},
		{"fall back in New York: 01:30 once", "30 1 * * *", newYork, time.Date(2026, 10, 31, 12, 0, 0, 0, newYork),
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"fall back: an hourly schedule runs every real hour", "0 * * * *", berlin, time.Date(2026, 10, 24, 23, 30, 0, 0, time.UTC), // 01:30 CEST
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"fall back: @hourly too", "@hourly", berlin, time.Date(2026, 10, 24, 23, 30, 0, 0, time.UTC),
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"@daily across both changes", "@daily", berlin, time.Date(2026, 3, 28, 12, 0, 0, 0, berlin),
			[]string{"2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, tt.when, tt.loc, tt.from)
			sameRuns(t, runs(s, tt.from, len(tt.want)), tt.want)
		})
	}
}

// The minimum gap is taken over the coming runs, not the first alone.
func TestMinGap(t *testing.T) {
	from := time.Date(2026, 1, 5, 10, 5, 0, 0, time.UTC)
	s := mustParse(t, "0,1,30 * * * *", time.UTC, from)
	if first := s.Next(s.Next(from)).Sub(s.Next(from)); first != 30*time.Minute {
		t.Fatalf("first gap %v, want 30m", first)
	}
	if gap := s.minGap(from, minGapRuns); gap != time.Minute {
		t.Errorf("minGap = %v, want 1m", gap)
	}
	if gap := mustParse(t, "@every 45s", time.UTC, from).minGap(from, minGapRuns); gap != 45*time.Second {
		t.Errorf("@every 45s: minGap = %v", gap)
	}
	if gap := mustParse(t, "in 1h", time.UTC, from).minGap(from, minGapRuns); gap != 0 {
		t.Errorf("a one-off: minGap = %v, want 0", gap)
	}
}
