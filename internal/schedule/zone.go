package schedule

import (
	"strings"
	"time"
)

// LoadZone is the IANA zone named tz ("" is UTC). "Local" is refused: it
// would mean whatever zone the host happens to run in, which differs
// between replicas and the laptop a schedule was tested on.
func LoadZone(tz string) (*time.Location, error) {
	tz = strings.TrimSpace(tz)
	if tz == "Local" {
		return nil, invalidf("unknown time zone %q (want an IANA name like Europe/Berlin)", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, invalidf("unknown time zone %q (want an IANA name like Europe/Berlin)", tz)
	}
	return loc, nil
}

// Zone is a new schedule's time zone: tz when given (an error when it is
// not a zone), else the creator's profile zone (skipped when unknown: it
// comes from the chat platform, not from the person asking), else the
// service's AGENT_TZ (agent, parsed by internal/config), else UTC (agent
// nil).
func Zone(tz, profile string, agent *time.Location) (*time.Location, error) {
	if strings.TrimSpace(tz) != "" {
		return LoadZone(tz)
	}
	if strings.TrimSpace(profile) != "" {
		if loc, err := LoadZone(profile); err == nil {
			return loc, nil
		}
	}
	if agent == nil {
		return time.UTC, nil
	}
	return agent, nil
}
