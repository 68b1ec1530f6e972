package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// sessionCalls lists the agents.sessions.setStatus calls of one thread as
// "status" or "status titled …" (the calls that carried a title).
func sessionCalls(h *harness, channel, thread string) []string {
	var out []string
	for _, s := range h.slack.SessionStatuses() {
		if s.Channel != channel || s.ThreadTS != thread {
			continue
		}
		line := s.Status
		if s.Title != "" {
			line += " titled " + s.Title + " by " + s.Initiator
		}
		out = append(out, line)
	}
	return out
}

// waitSession waits for the thread's session to be set to status (the
// nth time, nth > 1; the first otherwise).
func (h *harness) waitSession(channel, thread, status string, nth ...int) {
	h.t.Helper()
	want, seen := 1, 0
	if len(nth) > 0 {
		want = nth[0]
	}
	if _, err := h.slack.WaitForSessionStatus(h.ctx(), func(s fake.SessionStatus) bool {
		if s.Channel == channel && s.ThreadTS == thread && s.Status == status {
			seen++
		}
		return seen == want
	}); err != nil {
		h.t.Fatalf("session of %s/%s never %s: %v\ncalls %q\nlogs:\n%s", channel, thread, status, err,
			sessionCalls(h, channel, thread), h.logs)
	}
}

// A turn moves its thread's agent session: processing with a title when
// the session is new, suspended while its approval card waits (before the
// card shows), processing again once decided, active once answered.
func TestAgentViewSessionFollowsTheTurn(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.scriptApproval("deploy", "deploy prod")
	h.start()
	h.slack.SendEvent(fake.AppMention{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> ship it\nnow"}.Payload())
	card, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return len(p.Blocks) > 0 })
	if err != nil {
		t.Fatalf("no card: %v\nlogs:\n%s", err, h.logs)
	}
	if got, want := sessionCalls(h, "C0TEAM", "100.1"), []string{"processing titled ship it by U0MGR", "suspended"}; !slices.Equal(got, want) {
		t.Fatalf("while the card waits: session calls %q, want %q", got, want)
	}
	h.click("U0APP", card, "approve")
	h.expectReply("C0TEAM", "100.1", "approved by <@U0APP>")
	h.waitSession("C0TEAM", "100.1", "active")
	want := []string{"processing titled ship it by U0MGR", "suspended", "processing", "active"}
	if got := sessionCalls(h, "C0TEAM", "100.1"); !slices.Equal(got, want) {
		t.Fatalf("session calls %q, want %q", got, want)
	}
	// A second turn in the thread: the session exists, no new title.
	h.model.Enqueue(replyWith("again")...)
	h.slack.SendEvent(fake.AppMention{User: "U0MGR", Channel: "C0TEAM", TS: "100.5", ThreadTS: "100.1", Text: "<@U0BOT> again"}.Payload())
	h.expectReply("C0TEAM", "100.1", "again")
	h.waitSession("C0TEAM", "100.1", "active", 2)
	if got, want := sessionCalls(h, "C0TEAM", "100.1")[4:], []string{"processing", "active"}; !slices.Equal(got, want) {
		t.Fatalf("the second turn's session calls %q, want %q (no new title)", got, want)
	}
	if len(h.slack.Statuses()) != 0 {
		t.Fatalf("the status line was set beside the session: %+v", h.slack.Statuses())
	}
}

// A session whose thread falls idle is closed on the platform too.
func TestAgentViewSessionClosedAtIdle(t *testing.T) {
	h := newHarness(t, testSoul)
	h.env["AGENT_IDLE_MINUTES"] = "0.002" // 120 ms
	h.model.Enqueue(replyWith("hello there")...)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "hello"})
	h.expectReply("D0MGR", "100.1", "hello there")
	h.waitSession("D0MGR", "100.1", "closed")
	want := []string{"processing titled hello by U0MGR", "active", "closed"}
	if got := sessionCalls(h, "D0MGR", "100.1"); !slices.Equal(got, want) {
		t.Fatalf("session calls %q, want %q", got, want)
	}
}

// The platform's stop button mid-stream stops the turn: no more of the
// reply is written, the model is not called again, the thread is told who
// stopped it (after the turn's end), and the session is left active.
func TestAgentViewStopMidStream(t *testing.T) {
	h := newHarness(t, testSoul)
	// A reply written over ~6 s: the click comes long before its end.
	scriptStream(h, streamReply(), 60, 100*time.Millisecond)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	if _, err := h.slack.WaitForStream(h.ctx(), func(p fake.Post) bool { return p.Method == "chat.appendStream" }); err != nil {
		t.Fatalf("no stream: %v\nlogs:\n%s", err, h.logs)
	}
	env, stopped := h.slack.ClickStop("U0MGR", "D0MGR", "100.1")
	if len(stopped) != 1 {
		t.Fatalf("the click stopped streams %q, want the reply's", stopped)
	}
	if err := h.slack.WaitAck(h.ctx(), env); err != nil {
		t.Fatal(err)
	}
	said, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return p.Channel == "D0MGR" && p.ThreadTS == "100.1" && strings.Contains(p.Text, "stopped by <@U0MGR>")
	})
	if err != nil {
		t.Fatalf("the thread was not told: %v\nposts %+v\nlogs:\n%s", err, h.slack.Posts(), h.logs)
	}
	h.waitSession("D0MGR", "100.1", "active")
	calls := sessionCalls(h, "D0MGR", "100.1")
	if calls[len(calls)-1] != "active" {
		t.Fatalf("session calls %q: not left active", calls)
	}
	// The stop's answer waits for the turn's end: by then all the turn
	// wrote is written.
	for _, p := range append(h.slack.Streams(), h.slack.Updates()...) {
		if strings.Contains(p.Text, "Done.") {
			t.Fatalf("the reply went on to its end after the stop: %s %q", p.Method, p.Text)
		}
	}
	for _, p := range h.slack.Posts() {
		if strings.Contains(p.Text, "Sorry") {
			t.Fatalf("a stopped turn apologised: %q", p.Text)
		}
	}
	if n := len(h.model.Requests()); n != 1 {
		t.Fatalf("%d model calls, want the one stopped", n)
	}
	t.Logf("said %q", said.Text)
}

// Where the platform refuses agent sessions, a DM turn shows the
// assistant status line as before, and the method is not asked again for
// the next turn.
func TestAgentViewFallsBackToStatusLine(t *testing.T) {
	h := newHarness(t, testSoul)
	h.slack.Errors = map[string]string{"agents.sessions.setStatus": "unknown_method"}
	h.model.Enqueue(append(replyWith("one"), replyWith("two")...)...)
	h.start()
	for i, ts := range []string{"100.1", "200.1"} {
		h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: ts, Text: "hello"})
		h.expectReply("D0MGR", ts, []string{"one", "two"}[i])
		if _, err := h.slack.WaitForStatus(h.ctx(), func(s fake.Status) bool {
			return s.ThreadTS == ts && strings.Contains(s.Status, "is thinking")
		}); err != nil {
			t.Fatalf("no status line in thread %s: %v", ts, err)
		}
	}
	if n := countCalls(h.slack.Calls(), "agents.sessions.setStatus"); n != 1 {
		t.Fatalf("agents.sessions.setStatus called %d times, want once (the refusal remembered)", n)
	}
}

func countCalls(calls []string, method string) int {
	n := 0
	for _, c := range calls {
		if c == method {
			n++
		}
	}
	return n
}

const promptsSoul = testSoul + `
## Suggested prompts
- What ships this week?
- Summarise the release calendar
`

// The persona's suggested prompts are offered to whom opens its DM (the
// messages tab) and on a new DM thread.
func TestAgentViewSuggestedPrompts(t *testing.T) {
	h := newHarness(t, promptsSoul)
	h.model.Enqueue(replyWith("hi")...)
	h.start()
	want := []fake.Prompt{{Title: "What ships this week?", Message: "What ships this week?"},
		{Title: "Summarise the release calendar", Message: "Summarise the release calendar"}}
	h.slack.SendEvent(fake.AppHomeOpened{User: "U0MGR", Channel: "D0MGR"}.Payload())
	p, err := h.slack.WaitForPrompts(h.ctx(), nil)
	if err != nil {
		t.Fatalf("no prompts on opening the DM: %v\nlogs:\n%s", err, h.logs)
	}
	if p.Channel != "D0MGR" || !slices.Equal(p.Prompts, want) {
		t.Fatalf("prompts %+v, want %+v in D0MGR", p, want)
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "hello"})
	h.expectReply("D0MGR", "100.1", "hi")
	offers := 0
	if _, err := h.slack.WaitForPrompts(h.ctx(), func(q fake.SuggestedPrompts) bool {
		if q.Channel == "D0MGR" && slices.Equal(q.Prompts, want) {
			offers++
		}
		return offers == 2
	}); err != nil {
		t.Fatalf("prompts on the new DM thread: %v, calls %+v", err, h.slack.Prompts())
	}
}
