package store

import (
	"context"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/memory"
)

// The Home tab's reads: a person's threads (from their turns' usage, the
// latest first), the memories they asked for, the channels' own modes
// (not a thread's), the mutes in force (not an expired one).
func TestHomeReads(t *testing.T) {
	s, c := newTestStore(t)
	ctx := context.Background()
	for _, r := range []UsageRecord{
		{ThreadKey: "C1:1.1", ChannelID: "C1", UserID: "U1", Model: "m", Usage: Usage{Input: 1}},
		{ThreadKey: "D1:2.2", ChannelID: "D1", UserID: "U1", Model: "m", Usage: Usage{Input: 1}},
		{ThreadKey: "C1:3.3", ChannelID: "C1", UserID: "U2", Model: "m", Usage: Usage{Input: 1}},
	} {
		c.Advance(time.Minute)
		if err := s.RecordUsage(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	ts, err := s.ThreadsOf(ctx, "U1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Key != "D1:2.2" || ts[1].Key != "C1:1.1" {
		t.Errorf("threads of U1: %+v", ts)
	}
	if ts, _ := s.ThreadsOf(ctx, "U1", 1); len(ts) != 1 {
		t.Errorf("limit 1: %+v", ts)
	}
	for _, m := range []memory.Memory{{Text: "one", Author: "U1", Channel: "C1", Scope: memory.ScopeConversation},
		{Text: "two", Author: "U2", Channel: "C1", Scope: memory.ScopeConversation}} {
		if _, err := s.AddMemory(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if ms, err := s.MemoriesBy(ctx, "U1"); err != nil || len(ms) != 1 || ms[0].Text != "one" {
		t.Errorf("memories by U1: %+v, %v", ms, err)
	}
	for key, mode := range map[string]string{"C1:": "plan", "C2:5.5": "bypass", "C3:": ""} {
		if err := s.SetThreadMode(ctx, key, mode); err != nil {
			t.Fatal(err)
		}
	}
	if ms, err := s.ChannelModes(ctx); err != nil || len(ms) != 1 || ms[0] != (ChannelMode{ChannelID: "C1", Mode: "plan"}) {
		t.Errorf("channel modes: %+v, %v", ms, err)
	}
	if err := s.SetIgnore(ctx, IgnoreUser, "U3", "U0MGR", c.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetIgnore(ctx, IgnoreThread, "C1:", "U0MGR", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetIgnore(ctx, IgnoreUser, "U4", "U0MGR", c.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Minute)
	ms, err := s.Mutes(ctx, c.Now())
	if err != nil || len(ms) != 2 || ms[0].Kind != IgnoreThread || ms[1].Target != "U3" || ms[1].Until.IsZero() || !ms[0].Until.IsZero() {
		t.Errorf("mutes: %+v, %v", ms, err)
	}
}
