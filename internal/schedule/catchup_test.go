package schedule

import (
	"testing"
	"time"
)

// The catch-up rule: of the due times up to now, the latest runs once if
// missed by at most the window; the older are skipped and counted.
func TestCatchUp(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	created := at("2026-01-01T00:00:00Z")
	hourly := mustParse(t, "0 * * * *", time.UTC, created)
	minutely := mustParse(t, "* * * * *", time.UTC, created)
	every := mustParse(t, "@every 10m", time.UTC, created)
	once := mustParse(t, "2026-01-05T09:00:00Z", time.UTC, created)
	for _, tt := range []struct {
		name      string
		spec      *Spec
		due, now  string
		window    time.Duration
		run, next string // "" for none
		missed    int
	}{
		{"on time", hourly, "2026-01-05T09:00:00Z", "2026-01-05T09:00:00.002Z", time.Hour, "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", 0},
		{"not due yet", hourly, "2026-01-05T10:00:00Z", "2026-01-05T09:30:00Z", time.Hour, "", "2026-01-05T10:00:00Z", 0},
		{"late within the window", hourly, "2026-01-05T09:00:00Z", "2026-01-05T09:40:00Z", time.Hour, "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", 0},
		{"the next due time came meanwhile", hourly, "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", 30 * time.Minute, "2026-01-05T10:00:00Z", "2026-01-05T11:00:00Z", 1},
		{"down three hours: the latest runs", hourly, "2026-01-05T06:00:00Z", "2026-01-05T09:20:00Z", time.Hour, "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", 3},
		{"down past the window: all skipped", hourly, "2026-01-05T06:00:00Z", "2026-01-05T09:50:00Z", 30 * time.Minute, "", "2026-01-05T10:00:00Z", 4},
		{"several in the window: only the latest", every, "2026-01-05T09:00:00Z", "2026-01-05T09:35:00Z", time.Hour, "2026-01-05T09:30:00Z", "2026-01-05T09:40:00Z", 3},
		{"a one-off within the window", once, "2026-01-05T09:00:00Z", "2026-01-05T09:59:00Z", time.Hour, "2026-01-05T09:00:00Z", "", 0},
		{"a one-off past the window", once, "2026-01-05T09:00:00Z", "2026-01-05T10:01:00Z", time.Hour, "", "", 1},
		{"down a month, every minute: counted to the cap", minutely, "2026-01-05T00:00:00Z", "2026-02-05T00:00:30Z", time.Hour, "2026-02-05T00:00:00Z", "2026-02-05T00:01:00Z", maxCounted + 59},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := CatchUp(tt.spec, at(tt.due), at(tt.now), tt.window)
			str := func(v time.Time) string {
				if v.IsZero() {
					return ""
				}
				return v.UTC().Format(time.RFC3339)
			}
			if str(p.Run) != tt.run || str(p.Next) != tt.next || p.Missed != tt.missed {
				t.Errorf("plan run %q next %q missed %d; want run %q next %q missed %d", str(p.Run), str(p.Next), p.Missed, tt.run, tt.next, tt.missed)
			}
		})
	}
}
