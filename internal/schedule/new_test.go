package schedule

import (
	"errors"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	now := time.Date(2026, 1, 5, 8, 30, 0, 123456789, time.UTC)
	s, err := New(Request{Creator: "U1", Channel: "C1", ThreadTS: "1.2", When: "0 9 * * 1-5", Prompt: "  post the open incidents ", Name: " ops "}, berlin, now)
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(s.ID) || s.Target != TargetThread || s.TZ != "Europe/Berlin" || s.Prompt != "post the open incidents" || s.Name != "ops" {
		t.Errorf("schedule %+v", s)
	}
	if want := time.Date(2026, 1, 6, 8, 0, 0, 0, time.UTC); !s.NextRunAt.Equal(want) {
		t.Errorf("NextRunAt %v, want %v", s.NextRunAt, want)
	}
	if !s.CreatedAt.Equal(now.Truncate(time.Millisecond)) {
		t.Errorf("CreatedAt %v: want now in milliseconds, as stored", s.CreatedAt)
	}
	// A one-off in a duration parses back from the store to the same time.
	once, err := New(Request{When: "in 3s", Prompt: "p", Target: TargetChannel}, berlin, now)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := once.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Next(once.CreatedAt.Add(-time.Hour)); !got.Equal(once.NextRunAt) || !got.Equal(now.Truncate(time.Millisecond).Add(3*time.Second)) {
		t.Errorf("stored one-off due %v, created due %v", got, once.NextRunAt)
	}
}

// Bad input is one line naming what is wrong, matching ErrInvalid.
func TestNewErrors(t *testing.T) {
	now := time.Date(2026, 1, 5, 8, 30, 0, 0, time.UTC)
	ok := Request{When: "@daily", Prompt: "p"}
	with := func(f func(*Request)) Request { r := ok; f(&r); return r }
	for _, tt := range []struct {
		name string
		req  Request
		want string
	}{
		{"bad when", with(func(r *Request) { r.When = "every day" }), `invalid cron expression: expected exactly 5 fields, found 2: [every day]`},
		{"time in the past", with(func(r *Request) { r.When = "2026-01-05T08:00:00Z" }), `time in the past: 2026-01-05T08:00:00Z is before now (2026-01-05T08:30:00Z)`},
		{"in nothing", with(func(r *Request) { r.When = "in 0s" }), `time in the past: 2026-01-05T08:30:00Z is before now (2026-01-05T08:30:00Z)`},
		{"in a negative duration", with(func(r *Request) { r.When = "in -5m" }), `time in the past: 2026-01-05T08:25:00Z is before now (2026-01-05T08:30:00Z)`},
		{"empty prompt", with(func(r *Request) { r.Prompt = " \n " }), `empty prompt: say what the persona should do at each run`},
		{"unknown target", with(func(r *Request) { r.Target = "dm" }), `unknown target "dm" (want thread or channel)`},
		{"too frequent", with(func(r *Request) { r.When = "@every 30s" }), `too frequent: "@every 30s" runs 30s apart; a recurring schedule runs at most once a minute`},
		{"too frequent by a second", with(func(r *Request) { r.When = "@every 59s" }), `too frequent: "@every 59s" runs 59s apart; a recurring schedule runs at most once a minute`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.req, time.UTC, now)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("New = %v\nwant %s", err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not match ErrInvalid", err)
			}
		})
	}
	for _, when := range []string{"* * * * *", "@every 1m", "@every 1h", "in 1s", "0,1,2 * * * *"} {
		if _, err := New(with(func(r *Request) { r.When = when }), time.UTC, now); err != nil {
			t.Errorf("%q: %v", when, err)
		}
	}
}

func TestZone(t *testing.T) {
	for _, tt := range []struct {
		name, tz, profile, agent, want, err string
	}{
		{"tz given", "Asia/Tokyo", "Europe/Berlin", "America/New_York", "Asia/Tokyo", ""},
		{"the creator's profile", "", "Europe/Berlin", "America/New_York", "Europe/Berlin", ""},
		{"AGENT_TZ", "", "", "America/New_York", "America/New_York", ""},
		{"UTC", "", "", "", "UTC", ""},
		{"a profile zone the tz database lacks", "", "Mars/Olympus", "America/New_York", "America/New_York", ""},
		{"unknown tz", "Mars/Olympus", "Europe/Berlin", "", "", `unknown time zone "Mars/Olympus" (want an IANA name like Europe/Berlin)`},
		{"the host's zone", "Local", "", "", "", `unknown time zone "Local" (want an IANA name like Europe/Berlin)`},
		{"a path", "../../etc/passwd", "", "", "", `unknown time zone "../../etc/passwd" (want an IANA name like Europe/Berlin)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var agent *time.Location
			if tt.agent != "" {
				agent, _ = time.LoadLocation(tt.agent)
			}
			loc, err := Zone(tt.tz, tt.profile, agent)
			switch {
			case tt.err != "" && (err == nil || err.Error() != tt.err || !errors.Is(err, ErrInvalid)):
				t.Fatalf("Zone = %v, %v; want error %s", loc, err, tt.err)
			case tt.err == "" && (err != nil || loc.String() != tt.want):
				t.Fatalf("Zone = %v, %v; want %s", loc, err, tt.want)
			}
		})
	}
}

func TestID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !ValidID(id) || seen[id] {
			t.Fatalf("NewID = %q (valid %v, seen %v)", id, ValidID(id), seen[id])
		}
		seen[id] = true
	}
	for _, id := range []string{"", "s", "sabcdefg", "sabcdefgh1", "xabcdefgh", "sABCDEFGH", "sabcdefg0", "sabcdefgh "} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
}
