package store

import (
	"encoding/json"
	"testing"
	"time"
)

func TestUsageSums(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	rec := func(thread, channel, user, model string, in, out, cr, cw int64) {
		t.Helper()
		err := s.RecordUsage(ctx, UsageRecord{ThreadKey: thread, ChannelID: channel, UserID: user, Model: model,
			Usage: Usage{Input: in, Output: out, CacheRead: cr, CacheWrite: cw}})
		if err != nil {
			t.Fatal(err)
		}
	}
	start := c.Now()
	rec("C1:1.0", "C1", "U1", "m1", 10, 20, 30, 40)
	c.Advance(time.Hour)
	rec("C1:1.0", "C1", "U2", "m1", 1, 2, 3, 4)
	rec("C1:2.0", "C1", "U1", "m2", 100, 0, 0, 0)
	rec("C2:3.0", "C2", "U1", "m1", 1000, 0, 0, 0)

	got, err := s.UsageOf(ctx, UsageFilter{ThreadKey: "C1:1.0", Since: start})
	if err != nil || len(got) != 1 || got[0].Usage != (Usage{11, 22, 33, 44}) {
		t.Fatalf("thread usage = %+v, %v", got, err)
	}
	got, err = s.UsageOf(ctx, UsageFilter{ChannelID: "C1", Since: start.Add(time.Minute)})
	if err != nil || len(got) != 2 || got[0].Usage.Input != 1 || got[1].Model != "m2" {
		t.Fatalf("channel usage since = %+v, %v", got, err)
	}
	got, err = s.UsageOf(ctx, UsageFilter{UserID: "U1", Since: start.Add(time.Minute)})
	if err != nil || len(got) != 2 || got[0].Model != "m1" || got[0].Input != 1000 || got[1].Input != 100 {
		t.Fatalf("person usage since = %+v, %v", got, err)
	}
	got, err = s.UsageBy(ctx, start, UsageByPerson)
	if err != nil || len(got) != 3 || got[0].Key != "U1" || got[0].Model != "m1" || got[0].Input != 1010 {
		t.Fatalf("by person = %+v, %v", got, err)
	}
	if _, err := s.UsageBy(ctx, start, "planet"); err == nil {
		t.Error("an unknown grouping was accepted")
	}
}

func TestBudgetNoticeOnceAndRaises(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	for i, want := range []bool{true, false} {
		if first, err := s.NoteBudgetNotice(ctx, "C1:1.0", "2026-01-01"); err != nil || first != want {
			t.Fatalf("notice %d: first=%v err=%v", i, first, err)
		}
	}
	if first, _ := s.NoteBudgetNotice(ctx, "C1:1.0", "2026-01-02"); !first {
		t.Error("the next day's notice was taken for a repeat")
	}
	_ = s.RaiseBudget(ctx, "C1:1.0", "thread", "", 500, "U1")
	_ = s.RaiseBudget(ctx, "C1:1.0", "thread", "", 250, "U1")
	_ = s.RaiseBudget(ctx, "C1:1.0", "channel", "2026-01-01", 7, "U1")
	if n, err := s.BudgetRaised(ctx, "C1:1.0", "thread", ""); err != nil || n != 750 {
		t.Errorf("raised = %d, %v; want 750", n, err)
	}
	if n, _ := s.BudgetRaised(ctx, "C1:2.0", "thread", ""); n != 0 {
		t.Errorf("another thread raised = %d", n)
	}
}

// One raise card per budget: a second claim while the first card waits
// gets that card; once it is decided (or expired by a restart) the next
// claim takes its place. A claim whose card was never created holds the
// budget for a minute only.
func TestClaimBudgetCard(t *testing.T) {
	s, c := newTestStore(t)
	ctx := t.Context()
	const key = "persona:2026-01-01"
	if _, held, err := s.ClaimBudgetCard(ctx, key, "A1"); err != nil || held {
		t.Fatalf("first claim: held=%v err=%v", held, err)
	}
	// Claimed, not created yet: held, without a card to link.
	if a, held, err := s.ClaimBudgetCard(ctx, key, "A2"); err != nil || !held || a.ID != "A1" || a.CardTS != "" {
		t.Fatalf("claim while the first is being posted: %+v held=%v err=%v", a, held, err)
	}
	if err := s.CreateApproval(ctx, Approval{ID: "A1", ThreadKey: "D1:1.0", ChannelID: "D1", ThreadTS: "1.0", Category: "budget"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetApprovalCard(ctx, "A1", "1.5"); err != nil {
		t.Fatal(err)
	}
	a, held, err := s.ClaimBudgetCard(ctx, key, "A3")
	if err != nil || !held || a.ID != "A1" || a.CardTS != "1.5" || a.ChannelID != "D1" {
		t.Fatalf("claim while A1 waits: %+v held=%v err=%v", a, held, err)
	}
	// Another budget is another card.
	if _, held, _ := s.ClaimBudgetCard(ctx, "persona:2026-01-02", "B1"); held {
		t.Error("another day's budget is held by A1")
	}
	if _, err := s.DecideApproval(ctx, "A1", ApprovalDenied, "U0MGR"); err != nil {
		t.Fatal(err)
	}
	if _, held, err := s.ClaimBudgetCard(ctx, key, "A4"); err != nil || held {
		t.Fatalf("claim after A1 was decided: held=%v err=%v", held, err)
	}
	// A4 never created: it holds the budget for a minute.
	c.Advance(30 * time.Second)
	if a, held, _ := s.ClaimBudgetCard(ctx, key, "A5"); !held || a.ID != "A4" {
		t.Fatalf("30 s after A4's claim: %+v held=%v", a, held)
	}
	c.Advance(31 * time.Second)
	if _, held, err := s.ClaimBudgetCard(ctx, key, "A6"); err != nil || held {
		t.Fatalf("a minute after A4's claim: held=%v err=%v", held, err)
	}
}

// model_usage is the one record of tokens: a negative count is refused.
func TestRecordUsageRefusesNegative(t *testing.T) {
	s, _ := newTestStore(t)
	err := s.RecordUsage(t.Context(), UsageRecord{ThreadKey: "C1:1", ChannelID: "C1", Model: "m1", Usage: Usage{CacheRead: -1}})
	if err == nil {
		t.Fatal("negative usage recorded")
	}
	if rows, err := s.UsageOf(t.Context(), UsageFilter{}); err != nil || len(rows) != 0 {
		t.Errorf("model usage = %+v, %v; want none", rows, err)
	}
}

// Migration 0014 drops the session's token counters (model_usage is the
// one record of tokens): the sessions, their messages (which refer to
// them, ON DELETE CASCADE) and the rows of model_usage are kept.
func TestSessionTokensMigration(t *testing.T) {
	ctx := t.Context()
	dbPath := testPath(t)
	before := migrationsBefore(t, "0014")
	c := newClock()
	old, err := open(ctx, dbPath, Options{Clock: c}, before)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.CreateSession(ctx, Session{ID: "s1", ThreadKey: "C1:1.0", Summary: "earlier"}); err != nil {
		t.Fatal(err)
	}
	// A tool result: the recall index is written by today's code in the
	// schema of a later migration (0018), which this database lacks.
	msg := Message{Role: RoleUser, Content: json.RawMessage(`[{"type":"tool_result","tool_use_id":"t1","content":"hi"}]`)}
	spent := &UsageRecord{ThreadKey: "C1:1.0", ChannelID: "C1", UserID: "U1", Model: "m1", Usage: Usage{Input: 10, Output: 20, CacheRead: 30, CacheWrite: 40}}
	if err := old.AppendAnswer(ctx, "s1", Answer{Spent: spent}, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := old.DB().ExecContext(ctx, "UPDATE sessions SET input_tokens = 10, output_tokens = 20, cache_read_tokens = 30, cache_write_tokens = 40"); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, dbPath, c)
	sess, err := s.SessionByThread(ctx, "C1:1.0")
	if err != nil || sess.ID != "s1" || sess.Summary != "earlier" {
		t.Errorf("session after the migration: %+v, %v", sess, err)
	}
	if h, err := s.History(ctx, "s1"); err != nil || len(h) != 1 || string(h[0].Content) != string(msg.Content) {
		t.Errorf("history after the migration: %+v, %v; want the message", h, err)
	}
	if rows, err := s.UsageOf(ctx, UsageFilter{ThreadKey: "C1:1.0"}); err != nil || len(rows) != 1 || rows[0].Usage != spent.Usage {
		t.Errorf("model usage after the migration: %+v, %v; want the call's row", rows, err)
	}
	for _, col := range []string{"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"} {
		var n int64
		if err := s.DB().QueryRowContext(ctx, "SELECT "+col+" FROM sessions").Scan(&n); err == nil {
			t.Errorf("sessions.%s is still there", col)
		}
	}
}
