package config

import (
	"fmt"
	"time"
)

// MinScheduleCatchUp is the smallest catch-up window: the timer finds a
// run a few milliseconds late as a matter of course, which is not a
// missed run, and no schedule runs more often than once a minute.
const MinScheduleCatchUp = time.Minute

// MaxMaxSchedules bounds AGENT_MAX_SCHEDULES: the list of a persona's
// schedules is one chat message, and each list reads them all.
const MaxMaxSchedules = 10000

// validateSchedules checks AGENT_TZ, AGENT_SCHEDULE_CATCHUP and
// AGENT_MAX_SCHEDULES, and sets Zone to AGENT_TZ's zone: the one parse of
// AGENT_TZ. Their defaults are the schedules' own (schedule.DefaultCatchUp,
// schedule.DefaultMax).
func (c *Config) validateSchedules() error {
	if c.TZ == "Local" {
		return fmt.Errorf("AGENT_TZ: %q is the host's zone, which differs between hosts: name an IANA zone like Europe/Berlin", c.TZ)
	}
	zone, err := time.LoadLocation(c.TZ)
	if err != nil {
		return fmt.Errorf("AGENT_TZ: unknown time zone %q (want an IANA name like Europe/Berlin)", c.TZ)
	}
	c.Zone = zone
	switch {
	case c.ScheduleCatchUp < MinScheduleCatchUp:
		return fmt.Errorf("AGENT_SCHEDULE_CATCHUP: must be at least %v, got %v", MinScheduleCatchUp, c.ScheduleCatchUp)
	case c.MaxSchedules < 1 || c.MaxSchedules > MaxMaxSchedules:
		return fmt.Errorf("AGENT_MAX_SCHEDULES: must be between 1 and %d, got %d", MaxMaxSchedules, c.MaxSchedules)
	}
	return nil
}
