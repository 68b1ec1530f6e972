package tools

import (
	"fmt"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The profile cache holds at most profileCap people: a full cache drops
// what expired first, then the oldest, never the newest.
func TestProfileCacheIsBounded(t *testing.T) {
	var pc profileCache
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for i := range profileCap + 50 {
		now := start.Add(time.Duration(i) * time.Millisecond)
		id := fmt.Sprintf("U%06d", i)
		pc.put(id, pipeline.Profile{UserID: id}, now)
		if pc.len() > profileCap {
			t.Fatalf("%d profiles cached after %d puts, cap %d", pc.len(), i+1, profileCap)
		}
	}
	last := start.Add(time.Duration(profileCap+49) * time.Millisecond)
	if _, ok := pc.get(fmt.Sprintf("U%06d", profileCap+49), last); !ok {
		t.Error("the newest profile was dropped")
	}
	if _, ok := pc.get("U000000", last); ok {
		t.Error("the oldest profile was kept past the cap")
	}
	// Once everything has expired, a put drops it all and keeps itself.
	later := last.Add(profileTTL)
	pc.put("U999999", pipeline.Profile{UserID: "U999999"}, later)
	if pc.len() != 1 {
		t.Errorf("%d profiles cached, want 1: the expired ones are dropped when the cache is full", pc.len())
	}
	if _, ok := pc.get("U999999", later); !ok {
		t.Error("the profile just put is not cached")
	}
	if _, ok := pc.get(fmt.Sprintf("U%06d", profileCap+49), later); ok {
		t.Error("an expired profile was served")
	}
}
