package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

func openApprovals(t *testing.T) *Store {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Open(context.Background(), testPath(t), Options{Clock: clock.NewManual(now)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestApprovalLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openApprovals(t)
	a := Approval{ID: "ap1", ThreadKey: "C1:1.0", ChannelID: "C1", ThreadTS: "1.0", Category: "Bash", Tool: "Bash",
		Summary: "ls", Digest: "abc", RequestedBy: "U1"}
	if err := s.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.SetApprovalCard(ctx, "ap1", "9.9"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetApproval(ctx, "ap1")
	if err != nil || got.State != ApprovalRequested || got.CardTS != "9.9" || got.Digest != "abc" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	pending, _ := s.PendingApprovals(ctx)
	if len(pending) != 1 {
		t.Fatalf("pending = %v", pending)
	}
	dec, err := s.DecideApproval(ctx, "ap1", ApprovalApproved, "U0MGR")
	if err != nil || dec.State != ApprovalApproved || dec.DecidedBy != "U0MGR" {
		t.Fatalf("decide = %+v, %v", dec, err)
	}
	if _, err := s.DecideApproval(ctx, "ap1", ApprovalDenied, "U2"); !errors.Is(err, ErrDecided) {
		t.Fatalf("second decision err = %v", err)
	}
	events, _ := s.ApprovalEvents(ctx, "ap1")
	if len(events) != 2 || events[0].Event != ApprovalRequested || events[1].Event != ApprovalApproved {
		t.Fatalf("events = %+v", events)
	}
	if pending, _ := s.PendingApprovals(ctx); len(pending) != 0 {
		t.Fatalf("pending after decision = %v", pending)
	}
	if _, err := s.DecideApproval(ctx, "nope", ApprovalApproved, "U"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown approval err = %v", err)
	}
	since, _ := s.ApprovalsSince(ctx, time.Time{})
	if len(since) != 1 || since[0].State != ApprovalApproved {
		t.Fatalf("since = %+v", since)
	}
}

// An approval of a tool that acts with the asker's own account keeps its
// server through every read, decided or not.
func TestApprovalActsAs(t *testing.T) {
	ctx := context.Background()
	s := openApprovals(t)
	for _, a := range []Approval{
		{ID: "own", ThreadKey: "C1:1.0", Category: "mcp__tracker__create", Tool: "mcp__tracker__create", RequestedBy: "U1", ActsAs: "tracker"},
		{ID: "plain", ThreadKey: "C1:1.0", Category: "Bash", Tool: "Bash", RequestedBy: "U1"},
	} {
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.GetApproval(ctx, "own"); err != nil || got.ActsAs != "tracker" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if got, err := s.GetApproval(ctx, "plain"); err != nil || got.ActsAs != "" {
		t.Fatalf("get plain = %+v, %v", got, err)
	}
	pending, err := s.PendingApprovals(ctx)
	if err != nil || len(pending) != 2 || pending[0].ActsAs != "tracker" || pending[1].ActsAs != "" {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	if dec, err := s.DecideApproval(ctx, "own", ApprovalDenied, "U1"); err != nil || dec.ActsAs != "tracker" {
		t.Fatalf("decide = %+v, %v", dec, err)
	}
}

func TestApprovalOneDecisionWins(t *testing.T) {
	ctx := context.Background()
	s := openApprovals(t)
	if err := s.CreateApproval(ctx, Approval{ID: "ap", ThreadKey: "k", Category: "skills"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.DecideApproval(ctx, "ap", ApprovalDenied, "U"); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d decisions won, want 1", wins)
	}
}

func TestThreadAllows(t *testing.T) {
	ctx := context.Background()
	s := openApprovals(t)
	if ok, _ := s.ToolAllowed(ctx, "k", "Bash"); ok {
		t.Fatal("allowed before")
	}
	for i := 0; i < 2; i++ {
		if err := s.AllowTool(ctx, "k", "Bash", "U0MGR"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := s.ToolAllowed(ctx, "k", "Bash"); !ok {
		t.Fatal("not allowed after AllowTool")
	}
	if ok, _ := s.ToolAllowed(ctx, "other", "Bash"); ok {
		t.Fatal("allow leaked to another thread")
	}
}
