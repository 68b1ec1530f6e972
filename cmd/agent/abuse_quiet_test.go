package main

import (
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/persona-runtime/agent/internal/fake"
	replyfeedback "github.com/persona-runtime/agent/internal/feedback"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/store"
)

// openDB opens the running service's SQLite file beside it (WAL: the test
// reads and writes while the service runs).
func (h *harness) openDB() *sql.DB {
	h.t.Helper()
	db, err := sql.Open(sqliteshim.ShimName, "file:"+filepath.Join(h.home, "db.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// waitInbox waits until the inbox holds event id in state, and returns
// its recorded error.
func waitInbox(t *testing.T, db *sql.DB, id, state string) string {
	t.Helper()
	var got, cause string
	var err error
	if !fake.Eventually(10*time.Second, func() bool {
		err = db.QueryRowContext(t.Context(), "SELECT state, error FROM inbox WHERE event_id = ?", id).Scan(&got, &cause)
		return err == nil && got == state
	}) {
		t.Fatalf("inbox %s: state %q (%v), want %q", id, got, err, state)
	}
	return cause
}

// postsIn returns the texts posted in a thread.
func postsIn(h *harness, channel, thread string) []string {
	var out []string
	for _, p := range h.slack.Posts() {
		if p.Channel == channel && p.ThreadTS == thread {
			out = append(out, p.Text)
		}
	}
	return out
}

// sqliteBusy returns the error SQLite itself gives a writer that finds the
// database locked by another: what a stage's store call returns when a
// lock is held past busy_timeout.
func sqliteBusy(t *testing.T) error {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "busy.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open(sqliteshim.ShimName, "file:"+st.Path()+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	holder, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	mustExecConn := func(c *sql.Conn, q string) error { _, err := c.ExecContext(t.Context(), q); return err }
	if err := mustExecConn(holder, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer mustExecConn(holder, "ROLLBACK")
	other, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	busy := mustExecConn(other, "BEGIN IMMEDIATE")
	if busy == nil || !store.IsTransient(busy) {
		t.Fatalf("no busy error from a locked database: %v", busy)
	}
	return busy
}

// A store failure in a stage before the agent (the database lost its
// threads table for a moment) is not silent: the person gets one line in
// their thread, the inbox records the event failed with the error, and
// the model is never asked. A channel mention, which arrives twice, gets
// one line; a plain reply in a channel thread, which may be chatter the
// bot is not part of, is recorded failed but not answered. Once the
// database is whole again, the thread is answered.
func TestAbuseStoreFailureInAStageIsTold(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.answerAll()
	h.start()
	db := h.openDB()
	mustExec(t, db, "ALTER TABLE threads RENAME TO threads_away")

	// The manager's DM: its thread's mode cannot be read (auth).
	h.send(fake.Message{EventID: "EvQuietDM", User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	h.expectNotice("D0MGR", "100.1", inbox.MsgStageFailed)
	if cause := waitInbox(t, db, "EvQuietDM", store.InboxFailed); !strings.Contains(cause, "auth: ") || !strings.Contains(cause, "no such table") {
		t.Errorf("inbox error %q, want the auth stage's store error", cause)
	}

	// A member's mention in a channel, twice (app_mention and message):
	// its /1on1 lock cannot be read (drop).
	h.slack.SendEvent(fake.AppMention{EventID: "EvQuietMention1", User: "U0ALICE", Channel: "C0TEAM", TS: "200.1", Text: "<@U0BOT> deploy?"}.Payload())
	h.send(fake.Message{EventID: "EvQuietMention2", User: "U0ALICE", Channel: "C0TEAM", TS: "200.1", Text: "<@U0BOT> deploy?"})
	waitInbox(t, db, "EvQuietMention1", store.InboxFailed)
	waitInbox(t, db, "EvQuietMention2", store.InboxFailed)

	// Chatter in a channel thread: failed, not answered.
	h.send(fake.Message{EventID: "EvQuietChatter", User: "U0ALICE", Channel: "C0TEAM", TS: "300.2", ThreadTS: "300.1", Text: "lunch?"})
	waitInbox(t, db, "EvQuietChatter", store.InboxFailed)

	// (Each line is posted before its event is recorded failed.)
	if got := postsIn(h, "C0TEAM", "200.1"); len(got) != 1 || got[0] != inbox.MsgStageFailed {
		t.Errorf("the mention's thread: %q, want the one line", got)
	}
	if got := postsIn(h, "C0TEAM", "300.1"); len(got) != 0 {
		t.Errorf("the chatter's thread: %q, want nothing", got)
	}
	if got := postsIn(h, "D0MGR", "100.1"); len(got) != 1 {
		t.Errorf("the DM: %q, want the one line", got)
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
	h.waitMetric(`agent_inbox_events_total{outcome="failed"}`, 4)

	mustExec(t, db, "ALTER TABLE threads_away RENAME TO threads")
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "and now?"})
	h.expectReply("D0MGR", "100.1", "and now?")
}

// A transient store failure (SQLite busy, a Postgres connection lost) in
// a stage is tried again and the message is answered, with no line about
// it; one that outlasts the tries is told like any other failure.
func TestAbuseTransientStoreFailureIsRetried(t *testing.T) {
	busy := sqliteBusy(t)
	pauses := []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	var failures, tries atomic.Int32
	h := newHarness(t, rulesSoul)
	h.deps = func(d *service.Deps) {
		d.StoreRetry.Pauses = pauses
		d.StoreRetry.Fault = func(op string) error {
			if op != "thread_mode" {
				return nil
			}
			tries.Add(1)
			if failures.Add(-1) >= 0 {
				return busy
			}
			return nil
		}
	}
	h.answerAll()
	h.start()
	db := h.openDB()

	failures.Store(2)
	h.send(fake.Message{EventID: "EvBusyOnce", User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	h.expectReply("D0MGR", "100.1", "status?")
	waitInbox(t, db, "EvBusyOnce", store.InboxAnswered)
	if n := tries.Load(); n != 3 {
		t.Errorf("the mode was read %d times, want 3 (two busy, then the answer)", n)
	}
	h.waitLog("store: transient failure, trying again")
	if got := postsIn(h, "D0MGR", "100.1"); len(got) != 1 {
		t.Errorf("the thread: %q, want the answer alone", got)
	}

	tries.Store(0)
	failures.Store(1000)
	h.send(fake.Message{EventID: "EvBusyLong", User: "U0MGR", Channel: "D0MGR", TS: "200.1", Text: "again?"})
	h.expectNotice("D0MGR", "200.1", inbox.MsgStageFailed)
	if cause := waitInbox(t, db, "EvBusyLong", store.InboxFailed); !strings.Contains(cause, busy.Error()) {
		t.Errorf("inbox error %q, want the busy error", cause)
	}
	if n := tries.Load(); n != int32(len(pauses)+1) {
		t.Errorf("the mode was read %d times, want %d", n, len(pauses)+1)
	}
}

// The settled inbox rows and the old processed-event keys are pruned on a
// timer, not only at start: rows made old while the service runs go at
// the next tick; recent ones stay.
func TestAbusePruneRunsOnATimer(t *testing.T) {
	h := newHarness(t, testSoul)
	h.deps = func(d *service.Deps) { d.PruneEvery = 20 * time.Millisecond }
	h.start()
	db := h.openDB()
	old, recent := time.Now().Add(-8*24*time.Hour).UnixMilli(), time.Now().UnixMilli()
	mustExec(t, db, "INSERT INTO processed_events (event_key, seen_at) VALUES ('ts:D1:old', ?), ('ts:D1:recent', ?)", old, recent)
	for id, at := range map[string]int64{"EvPruneOld": old, "EvPruneRecent": recent} {
		mustExec(t, db, `INSERT INTO inbox (event_id, kind, event, state, received_at, updated_at) VALUES (?, 'message', '{}', 'answered', ?, ?)`,
			id, at, at)
	}
	count := func(query string) int {
		var n int
		if err := db.QueryRowContext(t.Context(), query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if !fake.Eventually(10*time.Second, func() bool {
		return count("SELECT count(*) FROM processed_events WHERE event_key = 'ts:D1:old'")+
			count("SELECT count(*) FROM inbox WHERE event_id = 'EvPruneOld'") == 0
	}) {
		t.Fatalf("old rows not pruned while the service runs\nlogs:\n%s", h.logs)
	}
	if count("SELECT count(*) FROM processed_events WHERE event_key = 'ts:D1:recent'") != 1 ||
		count("SELECT count(*) FROM inbox WHERE event_id = 'EvPruneRecent'") != 1 {
		t.Error("recent rows were pruned")
	}
}

// AGENT_SHUTDOWN_GRACE is how long a stopping service lets a running turn
// finish: past it, the turn is cut and left running in the inbox for the
// next start.
func TestAbuseShutdownGraceHonoured(t *testing.T) {
	h := newHarness(t, testSoul)
	h.env["AGENT_SHUTDOWN_GRACE"] = "300ms"
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	h.model.Enqueue(fake.AnthropicResponse{Gate: held, Content: []fake.AnthropicBlock{fake.AnthropicText("")}})
	h.start()
	db := h.openDB()
	h.send(fake.Message{EventID: "EvGrace", User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "slow one"})
	if err := h.model.WaitRequests(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if err := h.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"msg":"shutdown grace period over, cancelling running events","grace":"300ms"`) {
		t.Errorf("no cut after the 300ms grace in the logs:\n%s", logs)
	}
	waitInbox(t, db, "EvGrace", store.InboxRunning)
}

// A person's vote moves agent_reply_feedback_total only when it changes:
// the same click again counts nothing.
func TestAbuseRepeatedVoteCountsOnce(t *testing.T) {
	h := newHarness(t, testSoul)
	h.answerAll()
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "question"})
	up, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { id, _ := wireFeedback(t, p.Blocks); return id == "feedback" })
	if err != nil {
		t.Fatalf("no feedback buttons: %v", err)
	}
	acks := 0
	vote := func(value, ack string) {
		t.Helper()
		h.slack.Send("interactive", fake.BlockActions{User: "U0MGR", Channel: "D0MGR", MessageTS: up.TS, ThreadTS: "100.1",
			ActionID: "feedback", Value: value, Type: "feedback_buttons", BlockID: "feedback"}.Payload(), 0)
		acks++
		want := acks
		if _, err := h.slack.WaitForEphemeral(h.ctx(), func(fake.Post) bool { return len(h.slack.Ephemerals()) >= want }); err != nil {
			t.Fatalf("vote %d not acknowledged: %v", want, err)
		}
	}
	vote("good", replyfeedback.MsgGood)
	vote("good", replyfeedback.MsgGood)
	vote("good", replyfeedback.MsgGood)
	if got := h.metric(`agent_reply_feedback_total{value="good"}`); got != 1 {
		t.Errorf("three same votes counted %v, want 1", got)
	}
	vote("bad", replyfeedback.MsgBad)
	if good, bad := h.metric(`agent_reply_feedback_total{value="good"}`), h.metric(`agent_reply_feedback_total{value="bad"}`); good != 1 || bad != 1 {
		t.Errorf("after a changed vote: good %v, bad %v; want 1 and 1", good, bad)
	}
}

// Clicks pass the trust checks of messages: on a card in a restricted
// channel (only the managers speak there), a blocked user's click and an
// approver's click are dropped with their reasons and counted, and the
// card stays pending until the manager decides.
func TestAbuseClicksPassTheTrustLayers(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.scriptApproval("deploy", "deploy prod")
	h.start()
	ctx := h.ctx()
	h.slack.SendEvent(fake.AppMention{User: "U0MGR", Channel: "C0SECRET", TS: "100.1", Text: "<@U0BOT> ship it"}.Payload())
	card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 && p.ThreadTS == "100.1" })
	if err != nil {
		t.Fatalf("no card: %v\nlogs:\n%s", err, h.logs)
	}
	h.click("U0EVIL", card, "approve")
	h.waitMetric(drops("blocked"), 1)
	h.click("U0APP", card, "approve")
	h.waitMetric(drops("whitelist"), 1)
	for _, u := range h.slack.Updates() {
		if u.TS == card.TS {
			t.Fatalf("a dropped click changed the card: %s", u.Text)
		}
	}
	h.click("U0MGR", card, "approve")
	upd, err := h.slack.WaitForUpdate(ctx, func(p fake.Post) bool { return p.TS == card.TS })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(upd.Text, "approved by <@U0MGR>") {
		t.Errorf("card decided as %q, want by the manager", upd.Text)
	}
}

// With the HTTP ingress on the health port, the port the chat platform
// reaches serves no metrics and no profiles: they are on
// AGENT_METRICS_PORT.
func TestAbuseMetricsOffTheIngressPort(t *testing.T) {
	h, _ := newIngressHarness(t, testSoul)
	h.env["AGENT_PPROF"] = "1"
	h.start()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404, "/debug/pprof/": 404} {
		if code, _ := h.get(path); code != want {
			t.Errorf("ingress port: GET %s answered %d, want %d", path, code, want)
		}
	}
	if code, body := h.getAt(h.metricsPort, "/metrics"); code != 200 || !strings.Contains(body, "agent_sessions_live") {
		t.Errorf("metrics port: GET /metrics answered %d", code)
	}
	if code, _ := h.getAt(h.metricsPort, "/debug/pprof/"); code != 200 {
		t.Errorf("metrics port: GET /debug/pprof/ answered %d", code)
	}
	if code, _ := h.getAt(h.metricsPort, "/slack/events"); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("metrics port: /slack/events answered %d", code)
	}
}
