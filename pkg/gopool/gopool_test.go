package gopool

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// goid is the running goroutine's id, from its stack's first line.
func goid() string {
	var buf [64]byte
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine "), " ")
	return id
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !fake.Eventually(10*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestPoolReusesWaitingGoroutine(t *testing.T) {
	p := New(4, time.Minute)
	defer p.Close()
	ids := make(chan string, 2)
	p.Go(func() { ids <- goid() })
	first := <-ids
	waitFor(t, "a waiting goroutine", func() bool { return p.Waiting() == 1 })
	// Counted before it reaches its select: wait until it is parked there,
	// or Go's send finds nobody receiving yet and starts a new goroutine.
	waitFor(t, "the waiting goroutine parked", func() bool {
		buf := make([]byte, 1<<20)
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "[select") && strings.Contains(g, "gopool.(*Pool).run") {
				return true
			}
		}
		return false
	})
	p.Go(func() { ids <- goid() })
	if second := <-ids; second != first {
		t.Fatalf("second function ran on goroutine %s, the first on %s", second, first)
	}
}

func TestPoolBoundsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(2, time.Minute)
		defer p.Close()
		release := make(chan struct{})
		var started sync.WaitGroup
		for range 5 {
			started.Add(1)
			p.Go(func() { started.Done(); <-release })
		}
		started.Wait() // five goroutines: none waited when they were asked for
		close(release)
		synctest.Wait() // each of the five waits for a function or has ended
		if n := p.Waiting(); n != 2 {
			t.Fatalf("%d waiting, want at most 2", n)
		}
	})
}

func TestPoolWaitEnds(t *testing.T) {
	p := New(4, 10*time.Millisecond)
	defer p.Close()
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	waitFor(t, "the wait to end", func() bool { return p.Waiting() == 0 })
}

func TestPoolClose(t *testing.T) {
	p := New(4, time.Minute)
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	waitFor(t, "a waiting goroutine", func() bool { return p.Waiting() == 1 })
	p.Close()
	waitFor(t, "the waiting goroutine to end", func() bool { return p.Waiting() == 0 })
	ran := make(chan struct{})
	p.Go(func() { close(ran) }) // still runs, on a goroutine of its own
	<-ran
	p.Close() // twice: harmless
}
