package store

import (
	"testing"
	"time"
)

// One vote per person per reply: RecordFeedback says what it replaced, a
// repeat of the same vote changes nothing (not even its time), a changed
// vote replaces the first.
func TestRecordFeedback(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	vote := func(user, value string) string {
		t.Helper()
		prev, err := s.RecordFeedback(ctx, Feedback{ChannelID: "C1", MessageTS: "1.1", ThreadTS: "1.0", UserID: user, Value: value})
		if err != nil {
			t.Fatal(err)
		}
		return prev
	}
	start := c.Now()
	if prev := vote("U1", "good"); prev != "" {
		t.Errorf("first vote replaced %q", prev)
	}
	c.Advance(time.Hour)
	if prev := vote("U1", "good"); prev != "good" {
		t.Errorf("same vote again: previous %q, want good", prev)
	}
	if got, _ := s.FeedbackSince(ctx, start.Add(time.Minute)); len(got) != 0 {
		t.Errorf("a repeated vote moved its time: %+v", got)
	}
	if prev := vote("U1", "bad"); prev != "good" {
		t.Errorf("changed vote: previous %q, want good", prev)
	}
	if prev := vote("U2", "good"); prev != "" {
		t.Errorf("another person's first vote replaced %q", prev)
	}
	got, err := s.FeedbackSince(ctx, start)
	if err != nil || len(got) != 1 || got[0].Good != 1 || got[0].Bad != 1 {
		t.Fatalf("FeedbackSince = %+v, %v; want one good (U2) and one bad (U1)", got, err)
	}
	if _, err := s.RecordFeedback(ctx, Feedback{ChannelID: "C1", MessageTS: "1.1", UserID: "U1", Value: "meh"}); err == nil {
		t.Error("a vote that is neither good nor bad was stored")
	}
}
