package store

import (
	"testing"
	"time"
)

func TestIgnoresExpireAndSurviveReopen(t *testing.T) {
	c := newClock()
	path := testPath(t)
	s := openAt(t, path, c)
	ctx := t.Context()
	muted := func(user, thread, channel string) (bool, bool) {
		t.Helper()
		u, th, err := s.Muted(ctx, user, thread, channel, c.Now())
		if err != nil {
			t.Fatal(err)
		}
		return u, th
	}
	if u, th := muted("U1", "C1:1.1", "C1:"); u || th {
		t.Fatalf("muted before any /ignore: user %v thread %v", u, th)
	}
	if err := s.SetIgnore(ctx, IgnoreUser, "U1", "U0MGR", c.Now().Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetIgnore(ctx, IgnoreThread, "C1:2.2", "U0MGR", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetIgnore(ctx, IgnoreThread, "C2:", "U0MGR", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if u, th := muted("U1", "C1:1.1", "C1:"); !u || th {
		t.Errorf("U1 in C1:1.1: user %v thread %v, want user only", u, th)
	}
	if u, th := muted("U2", "C1:2.2", "C1:"); u || !th {
		t.Errorf("U2 in the muted thread: user %v thread %v, want thread only", u, th)
	}
	if _, th := muted("U2", "C2:3.3", "C2:"); !th {
		t.Error("a thread of a muted channel is not muted")
	}

	// The mutes are the store's: a restart keeps them.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, c)
	if u, _ := muted("U1", "C1:1.1", "C1:"); !u {
		t.Error("the mute of U1 was lost on reopening")
	}
	c.Advance(30 * time.Minute)
	if u, _ := muted("U1", "C1:1.1", "C1:"); u {
		t.Error("U1 is muted after the 30m ran out")
	}
	if lifted, err := s.RemoveIgnore(ctx, IgnoreUser, "U1", c.Now()); err != nil || lifted {
		t.Errorf("RemoveIgnore of an expired mute = %v, %v; want false", lifted, err)
	}
	if lifted, err := s.RemoveIgnore(ctx, IgnoreThread, "C1:2.2", c.Now()); err != nil || !lifted {
		t.Errorf("RemoveIgnore = %v, %v; want true", lifted, err)
	}
	if _, th := muted("U2", "C1:2.2", "C1:"); th {
		t.Error("the thread is muted after its mute was lifted")
	}
}

func TestThreadModel(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	if m, err := s.ModelOf(ctx, "C1:1.1", "C1:"); err != nil || m != "" {
		t.Fatalf("ModelOf unset = %q, %v", m, err)
	}
	if err := s.SetThreadModel(ctx, "C1:", "model-b"); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.ModelOf(ctx, "C1:1.1", "C1:"); m != "model-b" {
		t.Errorf("a thread of a channel with a model: %q", m)
	}
	if err := s.SetThreadModel(ctx, "C1:1.1", "model-c"); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.ModelOf(ctx, "C1:1.1", "C1:"); m != "model-c" {
		t.Errorf("the thread's own model: %q", m)
	}
	// The thread's other state is kept.
	if err := s.SetThreadMode(ctx, "C1:1.1", "plan"); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.ModelOf(ctx, "C1:1.1", "C1:"); m != "model-c" {
		t.Errorf("after /mode: %q", m)
	}
}
