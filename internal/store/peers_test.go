package store

import (
	"sync"
	"testing"
	"time"
)

// The peer-turn counts (issue 38): AGENT_PEER_TURNS between two messages
// of people, 20 in any hour, one log line per thread per hour, kept
// across a reopen, and never passed by turns taken at once (two replicas).
func TestPeerTurnsBounds(t *testing.T) {
	c := newClock()
	path := testPath(t)
	s := openAt(t, path, c)
	ctx := t.Context()
	take := func(thread string) (bool, bool) {
		t.Helper()
		ok, tell, err := s.TakePeerTurn(ctx, thread, 3, 20)
		if err != nil {
			t.Fatal(err)
		}
		return ok, tell
	}
	for i := range 3 {
		if ok, _ := take("C1:1.1"); !ok {
			t.Fatalf("turn %d refused within the bound", i+1)
		}
	}
	if ok, tell := take("C1:1.1"); ok || !tell {
		t.Fatalf("fourth turn: ok %v tell %v, want refused and told", ok, tell)
	}
	if ok, tell := take("C1:1.1"); ok || tell {
		t.Fatalf("fifth turn: ok %v tell %v, want refused, not told again", ok, tell)
	}
	if ok, _ := take("C1:2.2"); !ok {
		t.Fatal("another thread's turn refused")
	}

	// A restart keeps the count; a person's message starts it again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, c)
	if ok, _ := take("C1:1.1"); ok {
		t.Fatal("the bound was lost on reopening")
	}
	if err := s.PersonSpoke(ctx, "C1:1.1"); err != nil {
		t.Fatal(err)
	}
	if err := s.PersonSpoke(ctx, "C9:never.peer"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := take("C1:1.1"); !ok {
		t.Fatal("refused after a person spoke")
	}

	// The hour's bound: 20 turns however often people speak; the hour
	// after, turns are taken again, and a refusal is told again.
	n := 4
	for ; n < 30; n++ {
		if err := s.PersonSpoke(ctx, "C1:1.1"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := take("C1:1.1"); !ok {
			break
		}
	}
	if n != 20 {
		t.Fatalf("the hour's bound refused the turn after %d, want after 20", n-1)
	}
	c.Advance(time.Hour + time.Second)
	if ok, _ := take("C1:1.1"); !ok {
		t.Fatal("refused an hour later")
	}
	for range 2 {
		take("C1:1.1")
	}
	if ok, tell := take("C1:1.1"); ok || !tell {
		t.Fatalf("refused an hour later: ok %v tell %v, want told again", ok, tell)
	}
}

func TestPeerTurnsAtOnce(t *testing.T) {
	c := newClock()
	path := testPath(t)
	a, b := openAt(t, path, c), openAt(t, path, c)
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			ok, _, err := s.TakePeerTurn(t.Context(), "C1:1.1", 3, 20)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if taken != 3 {
		t.Fatalf("turns taken at once by two stores: %d, want 3", taken)
	}
}
