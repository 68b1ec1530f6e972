package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDevRestartsOnAWatchedFileChange(t *testing.T) {
	home := t.TempDir()
	soul := filepath.Join(home, "SOUL.md")
	os.WriteFile(soul, []byte("v1"), 0o600)
	starts := make(chan int, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	done := make(chan error, 1)
	go func() {
		done <- runWatching(ctx, home, 5*time.Millisecond, func(ctx context.Context) error {
			n++
			starts <- n
			if n == 2 {
				return errors.New("SOUL.md: missing required fields: mandate") // an edit in progress
			}
			<-ctx.Done()
			return nil
		}, io.Discard)
	}()
	wait := func(want int) {
		t.Helper()
		select {
		case got := <-starts:
			if got != want {
				t.Fatalf("start %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no start %d", want)
		}
	}
	wait(1)
	os.WriteFile(soul, []byte("v2, longer"), 0o600) // restart
	wait(2)                                         // fails: waits for the next change
	os.WriteFile(soul, []byte("v3, longer still"), 0o600)
	wait(3)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("runWatching returned %v", err)
	}
}
