package config

import (
	"testing"
	"time"
)

func TestScheduleSettings(t *testing.T) {
	c := parse(t, nil)
	if c.TZ != "" || c.ScheduleCatchUp != time.Hour || c.MaxSchedules != 100 {
		t.Fatalf("defaults: tz %q catch-up %v max %d", c.TZ, c.ScheduleCatchUp, c.MaxSchedules)
	}
	c = parse(t, map[string]string{"AGENT_TZ": "Asia/Tokyo", "AGENT_SCHEDULE_CATCHUP": "2h", "AGENT_MAX_SCHEDULES": "7"}, "--tz", "Europe/Berlin", "--schedule-catchup", "30m")
	if c.TZ != "Europe/Berlin" || c.ScheduleCatchUp != 30*time.Minute || c.MaxSchedules != 7 {
		t.Fatalf("env and flags: tz %q catch-up %v max %d", c.TZ, c.ScheduleCatchUp, c.MaxSchedules)
	}
	for _, tt := range []struct{ name, key, value, want string }{
		{"unknown zone", "AGENT_TZ", "Mars/Olympus", `AGENT_TZ: unknown time zone "Mars/Olympus" (want an IANA name like Europe/Berlin)`},
		{"the host's zone", "AGENT_TZ", "Local", `AGENT_TZ: "Local" is the host's zone, which differs between hosts: name an IANA zone like Europe/Berlin`},
		{"catch-up under a minute", "AGENT_SCHEDULE_CATCHUP", "30s", "AGENT_SCHEDULE_CATCHUP: must be at least 1m0s, got 30s"},
		{"no schedules", "AGENT_MAX_SCHEDULES", "0", "AGENT_MAX_SCHEDULES: must be between 1 and 10000, got 0"},
		{"too many", "AGENT_MAX_SCHEDULES", "100000", "AGENT_MAX_SCHEDULES: must be between 1 and 10000, got 100000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := valid()
			env[tt.key] = tt.value
			if err := parse(t, env).ValidateService(); err == nil || err.Error() != tt.want {
				t.Fatalf("ValidateService = %v\nwant %s", err, tt.want)
			}
		})
	}
	env := valid()
	env["AGENT_TZ"] = "America/New_York"
	c = parse(t, env)
	if err := c.ValidateService(); err != nil {
		t.Fatalf("a valid zone: %v", err)
	}
	if c.Zone == nil || c.Zone.String() != "America/New_York" {
		t.Errorf("Zone = %v, want AGENT_TZ parsed: America/New_York", c.Zone)
	}
	c = parse(t, valid())
	if err := c.ValidateService(); err != nil || c.Zone != time.UTC {
		t.Errorf("without AGENT_TZ: Zone = %v (%v), want UTC", c.Zone, err)
	}
}
