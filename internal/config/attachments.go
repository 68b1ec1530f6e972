package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultAttachmentsMaxGB is AGENT_ATTACHMENTS_MAX_GB's default: the total
// size of the files saved from messages in all the persona's thread
// workspaces, in GB (2^30 bytes, as AGENT_MAX_ATTACHMENT_MB's MB are 2^20).
const DefaultAttachmentsMaxGB = 2

// MaxAttachmentsMaxGB bounds AGENT_ATTACHMENTS_MAX_GB (1 PB): the quota in
// bytes stays far within an int64.
const MaxAttachmentsMaxGB = 1 << 20

// DefaultAttachmentsKeep is AGENT_ATTACHMENTS_KEEP's default: a file saved
// from a message is deleted 30 days after it was last written.
const DefaultAttachmentsKeep = 30 * 24 * time.Hour

// MinAttachmentsKeep is the shortest retention: a file is read back by the
// turns of its thread that follow, within minutes to hours.
const MinAttachmentsKeep = time.Hour

// AttachmentsQuota is AGENT_ATTACHMENTS_MAX_GB in bytes.
func (c *Config) AttachmentsQuota() int64 {
	return int64(c.AttachmentsMaxGB * (1 << 30))
}

// validateAttachmentsDisk checks AGENT_ATTACHMENTS_MAX_GB and
// AGENT_ATTACHMENTS_KEEP.
func (c *Config) validateAttachmentsDisk() error {
	switch gb := c.AttachmentsMaxGB; {
	case math.IsNaN(gb) || gb <= 0:
		return fmt.Errorf("AGENT_ATTACHMENTS_MAX_GB: must be above 0, got %v", gb)
	case gb > MaxAttachmentsMaxGB:
		return fmt.Errorf("AGENT_ATTACHMENTS_MAX_GB: must be at most %d, got %v", MaxAttachmentsMaxGB, gb)
	case c.AttachmentsQuota() < 1:
		return fmt.Errorf("AGENT_ATTACHMENTS_MAX_GB: %v GB is less than a byte", gb)
	case c.AttachmentsKeep < MinAttachmentsKeep:
		return fmt.Errorf("AGENT_ATTACHMENTS_KEEP: must be at least %v, got %v", MinAttachmentsKeep, FormatDays(c.AttachmentsKeep))
	}
	return nil
}

// ParseDays reads a duration given in days ("30d", "1.5d") or in Go's
// units ("12h", "90m").
func ParseDays(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 || math.IsInf(n, 0) || n > math.MaxInt64/float64(24*time.Hour) {
			return 0, fmt.Errorf("not a number of days: %q", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}

// FormatDays shows d as ParseDays reads it: whole days as "30d", anything
// else as Go does ("12h0m0s").
func FormatDays(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// daysValue is the flag of a duration that may be given in days.
type daysValue struct{ d *time.Duration }

func (v daysValue) String() string {
	if v.d == nil {
		return ""
	}
	return FormatDays(*v.d)
}

func (v daysValue) Set(s string) error {
	d, err := ParseDays(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}
