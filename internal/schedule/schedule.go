package schedule

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
	"time"
)

// Target is where a run is answered.
type Target string

const (
	// TargetThread answers in the thread the schedule was made in, in its
	// session.
	TargetThread Target = "thread"
	// TargetChannel posts at the channel's root; the post becomes the
	// run's thread.
	TargetChannel Target = "channel"
)

// Schedule is one stored schedule.
type Schedule struct {
	ID       string // s + base32 (NewID)
	Creator  string // the user id whose authority a run has
	Channel  string
	ThreadTS string // the thread it was made in
	Target   Target
	When     string // as given: cron, descriptor, in <duration>, RFC 3339
	TZ       string // IANA name the expression is read in
	Prompt   string
	Name     string // optional label
	// NextRunAt is the next due time; the zero time for none (a one-off
	// that ran is removed instead of kept).
	NextRunAt time.Time
	LastRunAt time.Time // the due time of the last run; zero: never ran
	// Missed counts the due times skipped: down for longer than the
	// catch-up window, or superseded by a later one.
	Missed    int
	Paused    bool
	CreatedAt time.Time
}

// Spec parses the stored schedule; an error means the stored `when` or
// zone no longer reads (a zone the tz database dropped).
func (s Schedule) Spec() (*Spec, error) {
	loc, err := LoadZone(s.TZ)
	if err != nil {
		return nil, err
	}
	return Parse(s.When, loc, s.CreatedAt)
}

// idEncoding writes ids in lower case without padding: typed by people
// after /unschedule.
var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID is a fresh schedule id: "s" and 8 base32 characters (40 random
// bits: a clash among a persona's hundred schedules is a one in ten
// million chance, and the store refuses it rather than overwriting).
func NewID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return "s" + strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// ValidID reports whether id has NewID's shape, so that a command can
// say "no cron job" to anything else without asking the store.
func ValidID(id string) bool {
	if len(id) != 9 || id[0] != 's' {
		return false
	}
	for _, c := range id[1:] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// RunID is the event id of the run of schedule id at due, the same on
// every replica and every try: the inbox records a due time once, and a
// second copy of it is a duplicate.
func RunID(id string, due time.Time) string {
	return RunIDPrefix(id) + strconv.FormatInt(due.UnixMilli(), 10)
}

// RunIDPrefix starts the event id of every run of schedule id.
func RunIDPrefix(id string) string { return "sched:" + id + ":" }
