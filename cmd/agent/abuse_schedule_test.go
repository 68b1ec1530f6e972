package main

import (
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Trust wall: a schedule made in a DM thread with a channel target posts
// only in that DM (the channel it was made in), never in a public
// channel, and its run starts a thread of its own: the DM thread's words
// are not in what the model reads for it.
func TestAbuseScheduledChannelRunKeepsTheDMsWords(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.answerAll()
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "600.1", Text: "the launch code is 7731"})
	h.expectReply("D0MGR", "600.1", "7731")
	h.stop()

	h.addDueSchedule("U0MGR", "D0MGR", "600.1", schedule.TargetChannel, "post the weekly digest")
	before := len(h.model.Requests())
	h.start()
	root, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return p.ThreadTS == "" })
	if err != nil {
		t.Fatalf("no top-level post: %v\nlogs:\n%s", err, h.logs)
	}
	if root.Channel != "D0MGR" {
		t.Fatalf("the run posted in %s, not the DM it was made in: %+v", root.Channel, root)
	}
	h.expectReply("D0MGR", root.TS, "(scheduled): post the weekly digest")
	for _, p := range h.slack.Posts() {
		if p.Channel != "D0MGR" {
			t.Fatalf("a post left the DM: %+v", p)
		}
	}
	for _, req := range h.model.Requests()[before:] {
		if strings.Contains(string(req.Messages), "7731") {
			t.Fatalf("the scheduled run's model request carries the DM's words: %s", req.Messages)
		}
	}
}

// mute writes a mute into the service's database, as /ignore (kind
// store.IgnoreUser, a user id) or /ignore-thread (store.IgnoreThread, a
// thread key) would, until lifted.
func (h *harness) mute(kind, target string) {
	h.t.Helper()
	st := h.openStore()
	defer st.Close()
	if err := st.SetIgnore(h.t.Context(), kind, target, "U0MGR", time.Time{}); err != nil {
		h.t.Fatal(err)
	}
}

// expectPaused waits for the pause notice of sc in the thread it was made
// in, saying why, and checks that the model was never asked, that nothing
// was posted at the channel's root and that sc is paused.
func (h *harness) expectPaused(sc schedule.Schedule, why string) {
	h.t.Helper()
	p := h.expectNotice(sc.Channel, sc.ThreadTS, "cron job "+sc.ID+" paused")
	if !strings.Contains(p.Text, "paused: "+why) || !strings.HasPrefix(p.Text, "<@U0MGR> ") {
		h.t.Errorf("pause notice = %q, want the manager told %q", p.Text, why)
	}
	if err := h.stop(); err != nil {
		h.t.Fatal(err)
	}
	if n := len(h.model.Requests()); n != 0 {
		h.t.Errorf("the model was asked %d times for a paused schedule", n)
	}
	for _, p := range h.postsIn(sc.Channel) {
		if p.ThreadTS == "" {
			h.t.Errorf("a paused channel run posted at the root: %+v", p)
		}
	}
	st := h.openStore()
	defer st.Close()
	if got, err := st.Schedule(h.t.Context(), sc.ID); err != nil || !got.Paused {
		h.t.Errorf("schedule %s: paused = %v, %v", sc.ID, got.Paused, err)
	}
}

// A schedule runs with its creator's voice: where the persona would not
// hear them say its prompt — they are muted, or the thread it was made in
// (or its channel) is — it is paused and the manager told, not run. The
// manager's own schedule in a muted channel runs: mutes never apply to
// the manager.
func TestAbuseScheduleMutedCreatorPaused(t *testing.T) {
	t.Run("muted creator", func(t *testing.T) {
		h := newHarness(t, scheduleSoul)
		h.answerAll()
		sc := h.addDueSchedule("U0APP", "C0PUB", "510.1", schedule.TargetThread, "post the open incidents")
		h.mute(store.IgnoreUser, "U0APP")
		h.start()
		h.expectPaused(sc, "its creator <@U0APP> is muted")
	})
	t.Run("muted thread, channel target", func(t *testing.T) {
		h := newHarness(t, scheduleSoul)
		h.answerAll()
		sc := h.addDueSchedule("U0APP", "C0PUB", "520.1", schedule.TargetChannel, "post the open incidents")
		h.mute(store.IgnoreThread, pipeline.ThreadKey("C0PUB", "520.1"))
		h.start()
		h.expectPaused(sc, "this conversation is muted")
	})
	t.Run("muted channel, the manager's schedule runs", func(t *testing.T) {
		h := newHarness(t, scheduleSoul)
		h.answerAll()
		h.addDueSchedule("U0MGR", "C0PUB", "530.1", schedule.TargetThread, "post the open incidents")
		h.mute(store.IgnoreThread, pipeline.ThreadKey("C0PUB", ""))
		h.start()
		h.expectReply("C0PUB", "530.1", "(scheduled): post the open incidents")
	})
}

// A channel that left the persona's lists is restricted: an approver's
// schedule made there when it was allowed is paused at its next run, the
// manager told, rather than speaking where its creator no longer may.
func TestAbuseScheduleChannelLeftLayersPaused(t *testing.T) {
	soul := strings.Replace(scheduleSoul, "## Allowed channels\n- <#C0PUB>\n", "## Allowed channels\n- <#C0OTHER>\n", 1)
	h := newHarness(t, soul)
	h.answerAll()
	sc := h.addDueSchedule("U0APP", "C0PUB", "540.1", schedule.TargetChannel, "post the open incidents")
	h.start()
	h.expectPaused(sc, "its creator <@U0APP> may no longer speak in this conversation")
}

// /unschedule removes only a schedule made in the conversation it is typed
// in: elsewhere the schedule is not found (the lists do not show it
// either), by command or by the tool; the manager and the backup may
// remove it from anywhere.
func TestAbuseUnscheduleOtherConversation(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.start()
	h.send(fake.Message{User: "U0APP", Channel: "C0TEAM", TS: "550.1", Text: `<@U0BOT> /schedule "@daily" "the team's digest"`})
	m := createdIDRE.FindStringSubmatch(h.expectNotice("C0TEAM", "550.1", "cron job created").Text)
	if m == nil {
		t.Fatal("no id")
	}
	id := m[1]
	h.send(fake.Message{User: "U0APP", Channel: "C0PUB", TS: "560.1", Text: "<@U0BOT> /unschedule " + id})
	if p := h.expectNotice("C0PUB", "560.1", "cron job"); p.Text != "no cron job "+id {
		t.Fatalf("/unschedule from another channel: %q", p.Text)
	}
	var result string
	h.script(
		use("u1", "mcp__agent_schedule__remove", map[string]string{"id": id}),
		func(res string, _ bool) fake.AnthropicResponse {
			result = res
			return sayText("u2", "done")(res, false)
		},
		end,
	)
	h.send(fake.Message{User: "U0APP", Channel: "C0PUB", TS: "561.1", Text: "<@U0BOT> remove " + id})
	h.expectReply("C0PUB", "561.1", "done")
	if result != "no cron job "+id {
		t.Fatalf("the remove tool from another channel: %q", result)
	}
	st := h.openStore()
	if _, err := st.Schedule(t.Context(), id); err != nil {
		t.Fatalf("the schedule is gone: %v", err)
	}
	st.Close()
	h.send(fake.Message{User: "U0MGR", Channel: "C0PUB", TS: "562.1", Text: "<@U0BOT> /unschedule " + id})
	h.expectNotice("C0PUB", "562.1", "cron job "+id+" removed")
}

// What a person typed into a schedule's prompt or name is posted again by
// the runtime (a channel run's root post, a pause notice) with its
// special mentions broken: a schedule pings nobody.
func TestAbuseScheduleBroadcastNeutralised(t *testing.T) {
	h := newHarness(t, scheduleSoul)
	h.answerAll()
	const pings = "<!channel> <!here> <!everyone> <!subteam^S0OPS>"
	h.addDueSchedule("U0MGR", "C0PUB", "570.1", schedule.TargetChannel, pings+" digest")
	sc, err := schedule.New(schedule.Request{Creator: "U0ALICE", Channel: "C0PUB", ThreadTS: "571.1", Target: schedule.TargetThread,
		When: "@hourly", Prompt: "ping", Name: pings + " name"}, time.UTC, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sc.NextRunAt = time.UnixMilli(time.Now().UnixMilli()).UTC()
	st := h.openStore()
	if _, err := st.CreateSchedule(t.Context(), sc, 100); err != nil {
		t.Fatal(err)
	}
	st.Close()
	h.start()
	root, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return p.Channel == "C0PUB" && p.ThreadTS == "" })
	if err != nil {
		t.Fatalf("no top-level post: %v\nlogs:\n%s", err, h.logs)
	}
	pause := h.expectNotice("C0PUB", "571.1", "paused")
	for _, p := range []fake.Post{root, pause} {
		if strings.Contains(p.Text, "<!") || !strings.Contains(p.Text, "< !channel> < !here> < !everyone> < !subteam^S0OPS>") {
			t.Errorf("a special mention passed through: %q", p.Text)
		}
	}
}
