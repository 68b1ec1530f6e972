package fake

import (
	"context"
	"time"
)

// eventuallyEvery is how often Eventually asks: often enough that a test
// waits at most a few milliseconds more than it must.
const eventuallyEvery = 5 * time.Millisecond

// Eventually reports whether cond holds within d, asking it every few
// milliseconds. It is for a state a test can observe but not be told of
// (a log line, a row, a metric); where the code under test can say when
// something happened, wait for that instead.
func Eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(eventuallyEvery)
	}
	return true
}

// Until is Eventually within ctx: it reports whether cond holds before ctx
// is done.
func Until(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(eventuallyEvery):
		}
	}
	return true
}
