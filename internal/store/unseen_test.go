package store

import (
	"testing"
	"time"
)

// TestThreadUnseen walks threads through the marks of what the bot has
// not seen: a reply's mention in a thread never engaged marks its root, a
// root's mention nothing, a disengagement its own message, and the mark
// stays until the turn that read it clears it.
func TestThreadUnseen(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	const key, root = "C1:100.000100", "100.000100"
	engage := func(key, root, ts string) string {
		t.Helper()
		unseen, err := s.Engage(ctx, key, "C1", root, ts)
		if err != nil {
			t.Fatal(err)
		}
		return unseen
	}
	mark := func(key string) string {
		t.Helper()
		th, err := s.GetThread(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return th.UnseenFrom
	}

	if got := engage("C1:50.000100", "50.000100", "50.000100"); got != "" {
		t.Errorf("a root's mention: unseen = %q, want none", got)
	}
	if got := engage(key, root, "100.000900"); got != root {
		t.Fatalf("a reply's mention in a thread never engaged: unseen = %q, want the root", got)
	}
	if got := engage(key, root, "100.001000"); got != root {
		t.Errorf("a mention before the first turn stored them: unseen = %q, want the root still", got)
	}
	if err := s.MarkSeen(ctx, key, "99.000000"); err != nil {
		t.Fatal(err)
	}
	if got := mark(key); got != root {
		t.Errorf("MarkSeen of another mark cleared it: %q", got)
	}
	if err := s.MarkSeen(ctx, key, root); err != nil {
		t.Fatal(err)
	}
	if got := engage(key, root, "100.001100"); got != "" {
		t.Errorf("a mention in an engaged thread that saw everything: unseen = %q, want none", got)
	}
	if err := s.Disengage(ctx, key, "100.001200"); err != nil {
		t.Fatal(err)
	}
	if err := s.Disengage(ctx, key, "100.001300"); err != nil {
		t.Fatal(err)
	}
	th, err := s.GetThread(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if th.Engaged || th.UnseenFrom != "100.001200" || th.ChannelID != "C1" || th.RootTS != root {
		t.Errorf("after two disengagements: %+v, want not engaged, unseen from the first", th)
	}
	if got := engage(key, root, "100.001400"); got != "100.001200" {
		t.Errorf("re-engaged: unseen = %q, want the disengagement's", got)
	}

	// A row a /mode made, the bot never engaged: a reply's mention marks
	// the root.
	if err := s.SetThreadMode(ctx, "C1:200.000100", "plan"); err != nil {
		t.Fatal(err)
	}
	if got := engage("C1:200.000100", "200.000100", "200.000500"); got != "200.000100" {
		t.Errorf("a mention in a thread with a mode only: unseen = %q, want the root", got)
	}
	if err := s.MarkSeen(ctx, "C1:none", "1.0"); err != nil {
		t.Errorf("MarkSeen of a thread without a row: %v", err)
	}
}

// Migration 0008 marks a thread disengaged before it at its last change:
// what was said since is unseen; an engaged thread gets no mark.
func TestThreadUnseenMigration(t *testing.T) {
	ctx := t.Context()
	dbPath := testPath(t)
	before := migrationsBefore(t, "0008")
	c := newClock()
	old, err := open(ctx, dbPath, Options{Clock: c}, before)
	if err != nil {
		t.Fatal(err)
	}
	c.Set(time.UnixMilli(1800000123_456))
	if err := old.SetEngaged(ctx, "C1:1.0", "C1", "1.0", false); err != nil {
		t.Fatal(err)
	}
	if err := old.SetEngaged(ctx, "C1:2.0", "C1", "2.0", true); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, dbPath, c)
	for key, want := range map[string]string{"C1:1.0": "1800000123.456000", "C1:2.0": ""} {
		th, err := s.GetThread(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if th.UnseenFrom != want {
			t.Errorf("%s after the migration: unseen = %q, want %q", key, th.UnseenFrom, want)
		}
	}
}
