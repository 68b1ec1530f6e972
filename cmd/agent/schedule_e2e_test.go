package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The run side of scheduled work against the fakes, through `agent
// start`: the schedules are written to the service's database before it
// starts (the commands that make them are another part), and the
// scheduler finds them at its first read.

// scheduleSoul has an approver, a member (U0ALICE, on no list) and a
// public channel.
const scheduleSoul = testSoul + `
## Allowed channels
- <#C0PUB>

## Approvers
- <@U0APP>: anything
`

// openStore opens the service's database (stopped, or beside it: WAL).
func (h *harness) openStore() *store.Store {
	h.t.Helper()
	st, err := store.Open(h.t.Context(), filepath.Join(h.home, "db.sqlite"), store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// addSchedule stores a schedule of creator made in channel/thread, due at
// next (a one-off: `in`).
func (h *harness) addSchedule(creator, channel, thread string, target schedule.Target, prompt string, when string) schedule.Schedule {
	h.t.Helper()
	sc, err := schedule.New(schedule.Request{Creator: creator, Channel: channel, ThreadTS: thread, Target: target,
		When: when, Prompt: prompt}, time.UTC, time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	st := h.openStore()
	defer st.Close()
	if sc, err = st.CreateSchedule(h.t.Context(), sc, 100); err != nil {
		h.t.Fatal(err)
	}
	return sc
}

// addDueSchedule stores a schedule due now (its next run moved to the
// present), recurring every hour unless once.
func (h *harness) addDueSchedule(creator, channel, thread string, target schedule.Target, prompt string) schedule.Schedule {
	h.t.Helper()
	sc, err := schedule.New(schedule.Request{Creator: creator, Channel: channel, ThreadTS: thread, Target: target,
		When: "@hourly", Prompt: prompt}, time.UTC, time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	sc.NextRunAt = time.UnixMilli(time.Now().UnixMilli()).UTC()
	st := h.openStore()
	defer st.Close()
	if sc, err = st.CreateSchedule(h.t.Context(), sc, 100); err != nil {
		h.t.Fatal(err)
	}
	return sc
}

// postsIn are the texts posted in channel (every thread).
func (h *harness) postsIn(channel string) []fake.Post {
	var out []fake.Post
	for _, p := range h.slack.Posts() {
		if p.Channel == channel {
			out = append(out, p)
		}
	}
	return out
}

// A one-off `in 3s` schedule made in a thread runs there, once, in the
// thread's session, as a message of role scheduled from its creator; the
// run is counted and settled in the inbox under its fixed id, and the
// one-off is gone.
func TestScheduleOneOffAnswersInItsThread(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.answerAll()
	sc := h.addSchedule("U0MGR", "D0MGR", "300.1", schedule.TargetThread, "check the build", "in 3s")
	h.start()
	h.expectReply("D0MGR", "300.1", "<@U0MGR> (scheduled): check the build")
	h.waitMetric(`agent_schedule_runs_total{outcome="ran"}`, 1)

	db := h.openDB()
	waitInbox(t, db, schedule.RunID(sc.ID, sc.NextRunAt), store.InboxAnswered)
	h.stop()
	st := h.openStore()
	defer st.Close()
	if _, err := st.Schedule(t.Context(), sc.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the one-off is still stored after its run: %v", err)
	}
}

// A channel target posts a new top-level message in the channel the
// schedule was made in, and the run answers in that message's thread,
// not in the thread the schedule was made in.
func TestScheduleChannelRunPostsAtTheRoot(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.answerAll()
	h.addDueSchedule("U0MGR", "C0PUB", "400.1", schedule.TargetChannel, "post the open incidents")
	h.start()
	root, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return p.Channel == "C0PUB" && p.ThreadTS == "" })
	if err != nil {
		t.Fatalf("no top-level post: %v\nlogs:\n%s", err, h.logs)
	}
	if !strings.Contains(root.Text, "post the open incidents") {
		t.Fatalf("root = %q", root.Text)
	}
	h.expectReply("C0PUB", root.TS, "(scheduled): post the open incidents")
	for _, p := range h.postsIn("C0PUB") {
		if p.ThreadTS == "400.1" {
			t.Fatalf("a channel run answered in the thread it was made in: %+v", p)
		}
	}
	// Its inbox record, written by the claim in the thread it was made
	// in, was moved to the top-level message's thread before it ran.
	var thread string
	if err := h.openDB().QueryRowContext(t.Context(), `SELECT thread_ts FROM inbox WHERE event_id LIKE 'sched:%'`).Scan(&thread); err != nil || thread != root.TS {
		t.Fatalf("the run's inbox record is in thread %q (%v), want the top-level message's %s", thread, err, root.TS)
	}
}

// A run whose turn fails says so in its target with the pinned line.
func TestScheduleFailedRunSaysSo(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	overloaded := fake.AnthropicResponse{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded", RetryAfterMs: "0"}
	h.model.Respond = func(fake.AnthropicRequest) fake.AnthropicResponse { return overloaded }
	h.addDueSchedule("U0MGR", "D0MGR", "310.1", schedule.TargetThread, "check the build")
	h.start()
	p := h.expectNotice("D0MGR", "310.1", "scheduled run failed: ")
	if !strings.HasPrefix(p.Text, "scheduled run failed: ") || !strings.Contains(p.Text, "model is unavailable") {
		t.Fatalf("failure line = %q", p.Text)
	}
}

// A schedule whose creator no longer may schedule work (a member now: not
// an approver, not a manager) does not run: every schedule of theirs is
// paused, the manager is told in the thread it was made in, and the model
// is never asked.
func TestScheduleCreatorWhoLostTheRoleIsPaused(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.answerAll()
	sc := h.addDueSchedule("U0ALICE", "C0PUB", "500.1", schedule.TargetChannel, "post the open incidents")
	other := h.addSchedule("U0ALICE", "C0PUB", "501.1", schedule.TargetThread, "later", "in 1h")
	h.start()
	p := h.expectNotice("C0PUB", "500.1", "paused")
	if !strings.Contains(p.Text, "<@U0MGR>") || !strings.Contains(p.Text, sc.ID) || !strings.Contains(p.Text, "<@U0ALICE>") {
		t.Fatalf("pause line = %q", p.Text)
	}
	h.expectNotice("C0PUB", "501.1", other.ID)
	h.stop()
	if n := len(h.model.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times for a paused schedule", n)
	}
	for _, p := range h.postsIn("C0PUB") {
		if p.ThreadTS == "" {
			t.Fatalf("a paused channel run posted at the root: %+v", p)
		}
	}
	st := h.openStore()
	defer st.Close()
	for _, id := range []string{sc.ID, other.ID} {
		got, err := st.Schedule(t.Context(), id)
		if err != nil || !got.Paused {
			t.Fatalf("schedule %s: paused = %v, %v", id, got.Paused, err)
		}
	}
}

// A creator who left the workspace (the platform says their account is
// deleted) is treated as one who lost the role: paused, the manager told,
// the model never asked.
func TestScheduleCreatorWhoLeftIsPaused(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.answerAll()
	h.slack.AddPerson(fake.Person{ID: "U0MGR", RealName: "Manager", Deleted: true})
	sc := h.addDueSchedule("U0MGR", "D0MGR", "330.1", schedule.TargetThread, "check the build")
	h.start()
	p := h.expectNotice("D0MGR", "330.1", "paused")
	if !strings.Contains(p.Text, sc.ID) {
		t.Fatalf("pause line = %q", p.Text)
	}
	h.stop()
	if n := len(h.model.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times for a schedule whose creator left", n)
	}
}

// A restart between the claim and the answer: the claimed run is in the
// inbox, so the next start resumes it with the usual line and it answers
// once; the schedule is not run a second time for that due time.
func TestScheduleRestartBetweenClaimAndAnswerResumes(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.env["AGENT_SHUTDOWN_GRACE"] = "300ms"
	held, _ := h.holdLongJobs()
	sc := h.addSchedule("U0MGR", "D0MGR", "320.1", schedule.TargetThread, "long job", "in 1s")
	h.start()
	select {
	case <-held:
	case <-h.ctx().Done():
		t.Fatalf("the run did not reach the model\nlogs:\n%s", h.logs)
	}
	h.stop()
	db := h.openDB()
	id := schedule.RunID(sc.ID, sc.NextRunAt)
	var state string
	if err := db.QueryRowContext(t.Context(), `SELECT state FROM inbox WHERE event_id = ?`, id).Scan(&state); err != nil || state != store.InboxRunning {
		t.Fatalf("inbox %s: state %q, %v", id, state, err)
	}

	h.answerAll()
	h.start()
	h.expectNotice("D0MGR", "320.1", inbox.MsgResumed)
	h.expectReply("D0MGR", "320.1", "(scheduled): long job")
	waitInbox(t, db, id, store.InboxAnswered)
	h.stop()
	var answers int
	for _, p := range h.postsIn("D0MGR") {
		if strings.Contains(p.Text, "(scheduled): long job") {
			answers++
		}
	}
	if answers != 1 {
		t.Fatalf("answers = %d, want 1", answers)
	}
}

// A run whose previous run of the same schedule is still going (here: left
// unfinished by a crash, resumed and held at the model) is skipped and
// counted, not queued behind it.
func TestScheduleBusyRunIsSkipped(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	held, release := h.holdLongJobs()
	sc := h.addDueSchedule("U0MGR", "D0MGR", "330.1", schedule.TargetThread, "long job")
	// The run of an hour ago, left running by a crash.
	earlier := sc.NextRunAt.Add(-time.Hour)
	st := h.openStore()
	ev := pipeline.Event{ID: schedule.RunID(sc.ID, earlier), Kind: pipeline.KindSchedule, Type: "schedule", UserID: "U0MGR",
		ChannelID: "D0MGR", ThreadTS: "330.1", Text: "long job", Schedule: &pipeline.Schedule{ID: sc.ID, Due: earlier,
			Channel: "D0MGR", ThreadTS: "330.1"}}
	data, _ := json.Marshal(&ev)
	if _, err := st.InboxReceive(t.Context(), store.InboxEntry{EventID: ev.ID, Kind: "schedule", ChannelID: "D0MGR",
		ThreadTS: "330.1", UserID: "U0MGR", Event: data}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.InboxStart(t.Context(), ev.ID, "trace-earlier"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	h.start()
	select {
	case <-held:
	case <-h.ctx().Done():
		t.Fatalf("the resumed run did not reach the model\nlogs:\n%s", h.logs)
	}
	h.waitMetric(`agent_schedule_runs_total{outcome="skipped_busy"}`, 1)
	release()
	h.expectNotice("D0MGR", "330.1", "done: ")
	if got := h.metric(`agent_schedule_runs_total{outcome="ran"}`); got != 0 {
		t.Fatalf("ran = %v: the busy due time ran", got)
	}
}

// Runs missed while the service was down: a schedule missed by less than
// AGENT_SCHEDULE_CATCHUP runs once at start (its latest due time); one
// missed by more is skipped and counted, and neither runs again before
// its next due time.
func TestScheduleCatchUpAfterDowntime(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.answerAll()
	h.env["AGENT_SCHEDULE_CATCHUP"] = "30m"
	// Daily at the minute 10 minutes ago and 2 hours ago: each missed one
	// due time, and the next is a day away.
	daily := func(thread, prompt string, ago time.Duration) schedule.Schedule {
		due := time.Now().UTC().Add(-ago).Truncate(time.Minute)
		sc := h.addSchedule("U0MGR", "D0MGR", thread, schedule.TargetThread, prompt, fmt.Sprintf("%d %d * * *", due.Minute(), due.Hour()))
		mustExec(t, h.openDB(), `UPDATE schedules SET next_run_at = ? WHERE id = ?`, due.UnixMilli(), sc.ID)
		return sc
	}
	recent := daily("340.1", "recent one", 10*time.Minute)
	old := daily("341.1", "old one", 2*time.Hour)
	h.start()
	h.expectReply("D0MGR", "340.1", "(scheduled): recent one")
	h.waitMetric(`agent_schedule_runs_total{outcome="skipped_missed"}`, 1)
	h.waitMetric(`agent_schedule_runs_total{outcome="ran"}`, 1)
	h.stop()
	for _, p := range h.postsIn("D0MGR") {
		if p.ThreadTS == "341.1" {
			t.Fatalf("a run missed by more than the window ran: %+v", p)
		}
	}
	st := h.openStore()
	defer st.Close()
	for _, id := range []string{recent.ID, old.ID} {
		sc, err := st.Schedule(t.Context(), id)
		if err != nil || !sc.NextRunAt.After(time.Now()) {
			t.Fatalf("schedule %s: next run %v, %v", id, sc.NextRunAt, err)
		}
	}
}
