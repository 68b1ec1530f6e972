package store

import (
	"errors"
	"testing"
	"time"
)

func TestGetThreadNotFound(t *testing.T) {
	s, _ := newTestStore(t)
	if _, err := s.GetThread(t.Context(), "C1:1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetThread = %v, want ErrNotFound", err)
	}
}

func TestThreadUpserts(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	const key = "C1:1700000000.000100"

	steps := []struct {
		name string
		do   func() error
		want Thread
	}{
		{
			name: "mode creates the row",
			do:   func() error { return s.SetThreadMode(ctx, key, "plan") },
			want: Thread{Key: key, Mode: "plan"},
		},
		{
			name: "engage fills channel and root",
			do:   func() error { return s.SetEngaged(ctx, key, "C1", "1700000000.000100", true) },
			want: Thread{Key: key, ChannelID: "C1", RootTS: "1700000000.000100", Engaged: true, Mode: "plan"},
		},
		{
			name: "lock",
			do:   func() error { return s.SetThreadLock(ctx, key, "U1") },
			want: Thread{Key: key, ChannelID: "C1", RootTS: "1700000000.000100", Engaged: true, Mode: "plan", LockedBy: "U1"},
		},
		{
			name: "disengage by key alone keeps channel and root",
			do:   func() error { return s.SetEngaged(ctx, key, "", "", false) },
			want: Thread{Key: key, ChannelID: "C1", RootTS: "1700000000.000100", Mode: "plan", LockedBy: "U1"},
		},
		{
			name: "release lock and reset mode",
			do: func() error {
				if err := s.SetThreadLock(ctx, key, ""); err != nil {
					return err
				}
				return s.SetThreadMode(ctx, key, "")
			},
			want: Thread{Key: key, ChannelID: "C1", RootTS: "1700000000.000100"},
		},
		{
			name: "lock creates the row",
			do:   func() error { return s.SetThreadLock(ctx, "D1:1", "U2") },
			want: Thread{Key: "D1:1", LockedBy: "U2"},
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			c.Advance(time.Minute)
			if err := step.do(); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetThread(ctx, step.want.Key)
			if err != nil {
				t.Fatal(err)
			}
			step.want.UpdatedAt = c.Now()
			if got != step.want {
				t.Errorf("GetThread =\n%+v, want\n%+v", got, step.want)
			}
		})
	}
}

func TestThreadEmptyKey(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	for name, err := range map[string]error{
		"SetEngaged":    s.SetEngaged(ctx, "", "C1", "1", true),
		"SetThreadMode": s.SetThreadMode(ctx, "", "ask"),
		"SetThreadLock": s.SetThreadLock(ctx, "", "U1"),
	} {
		if err == nil {
			t.Errorf("%s with empty key succeeded", name)
		}
	}
}
