package pipeline

import (
	"context"
	"strconv"
	"strings"
)

// RepliesQuery asks for one page of a thread's messages, oldest first.
type RepliesQuery struct {
	ChannelID string
	RootTS    string // the thread's root
	// Oldest and Latest bound the page's messages by ts, both included
	// ("" is no bound). The platform sends the thread's root first
	// whatever Oldest says: the caller filters.
	Oldest, Latest string
	// Cursor is the Next of the page before ("" for the first).
	Cursor string
	// Limit is the page's size; 0 is the platform's default.
	Limit int
}

// ThreadReader reads a thread's messages back from the platform, a page at
// a time. The Web API client (slackio.Chat) and the simulator's platform
// implement it. Errors name the Web API method.
type ThreadReader interface {
	ThreadReplies(ctx context.Context, q RepliesQuery) (MessagePage, error)
}

// CompareTS orders two platform timestamps ("1700000000.000100"): -1, 0 or
// +1 as a is before, equal to or after b. Timestamps are compared as
// numbers, seconds then the fraction, so that widths that differ (a test's
// "100.1") still order right.
func CompareTS(a, b string) int {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, aerr := strconv.ParseInt(as, 10, 64)
	bi, berr := strconv.ParseInt(bs, 10, 64)
	if aerr != nil || berr != nil {
		return strings.Compare(a, b)
	}
	switch {
	case ai < bi:
		return -1
	case ai > bi:
		return 1
	}
	// The fraction is a decimal fraction: "1" is "100000".
	width := max(len(af), len(bf))
	af += strings.Repeat("0", width-len(af))
	bf += strings.Repeat("0", width-len(bf))
	return strings.Compare(af, bf)
}
