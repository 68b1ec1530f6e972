package main

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/persona-runtime/agent/internal/fake"
)

// taskStory is each task's statuses in the order the stream calls showed
// them, and its last update.
func taskStory(updates []fake.TaskUpdate) (order []string, statuses map[string][]string, last map[string]fake.TaskUpdate) {
	statuses, last = map[string][]string{}, map[string]fake.TaskUpdate{}
	for _, u := range updates {
		if _, ok := last[u.ID]; !ok {
			order = append(order, u.ID)
		}
		statuses[u.ID] = append(statuses[u.ID], u.Status)
		last[u.ID] = u
	}
	return order, statuses, last
}

// A streamed turn with three tool calls and a card: each call is a task
// of one streamed message (plan mode), the card's wait a task of its own;
// a refused call ends as error with its reason, the others complete with
// their output; the message is stopped once the turn is over, and the
// answer follows as its own message. A credential in the command is never
// shown in any update, and the Bash task's title is its first line.
func TestTasksInTheStream(t *testing.T) {
	h := newHarness(t, rulesSoul) // AGENT_DEFAULT_MODE is ask: Bash asks a card
	cmd := "echo deploying with xoxb-test-token and a long tail of words that goes past sixty characters\necho second line"
	h.script(
		use("t1", "Read", map[string]string{"file_path": "missing.md"}),
		use("t2", "Grep", map[string]string{"pattern": "TODO"}),
		use("t3", "Bash", map[string]string{"command": cmd}),
		say("r1"),
	)
	h.start()
	ctx := h.ctx()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "check and deploy"})
	card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 })
	if err != nil {
		t.Fatalf("no card: %v\nlogs:\n%s", err, h.logs)
	}
	h.click("U0BACKUP", card, "approve")
	reply := h.expectReply("D0MGR", "100.1", "deploying")
	if _, err := h.slack.WaitForStream(ctx, func(p fake.Post) bool { return p.Method == "chat.stopStream" && p.Chunks != nil }); err != nil {
		t.Fatalf("the task message was not stopped: %v\nstreams %+v", err, h.slack.Streams())
	}

	streams := h.slack.Streams()
	start := streams[0]
	if start.Method != "chat.startStream" || start.Chunks == nil || start.ThreadTS != "100.1" ||
		start.Params.Get("task_display_mode") != "plan" || start.Params.Get("recipient_user_id") != "U0MGR" {
		t.Fatalf("first stream call: %+v", start)
	}
	for _, s := range streams {
		if s.TS != start.TS {
			t.Errorf("a second streamed message: %+v", s)
		}
		if strings.Contains(string(s.Chunks), "xoxb-test") {
			t.Errorf("a credential was shown in a task update: %s", s.Chunks)
		}
	}
	if reply.TS <= start.TS {
		t.Errorf("the answer (%s) came before the task message (%s)", reply.TS, start.TS)
	}
	order, statuses, last := taskStory(h.slack.TaskUpdates())
	if len(order) != 4 {
		t.Fatalf("tasks %v, want Read, Grep, Bash, the wait: %+v", order, h.slack.TaskUpdates())
	}
	read, grep, bash, wait := last[order[0]], last[order[1]], last[order[2]], last[order[3]]
	if read.Title != "Read missing.md" || read.Status != "error" || !strings.Contains(read.Details, "does not exist") {
		t.Errorf("the refused Read: %+v", read)
	}
	if grep.Title != "Grep TODO" || grep.Status != "complete" || grep.Output != "no matches" {
		t.Errorf("the Grep: %+v", grep)
	}
	if wait.Title != "Waiting for approval" || wait.Status != "complete" || !slices.Contains(statuses[wait.ID], "in_progress") {
		t.Errorf("the card's wait: %+v (statuses %v)", wait, statuses[wait.ID])
	}
	if bash.Status != "complete" || !strings.HasPrefix(bash.Title, "echo deploying with [redacted") ||
		strings.Contains(bash.Title, "second line") || utf8.RuneCountInString(bash.Title) > 60 {
		t.Errorf("the Bash: title %q (%d runes), status %s", bash.Title, utf8.RuneCountInString(bash.Title), bash.Status)
	}
	if !strings.Contains(bash.Output, "deploying") || strings.Contains(bash.Output, "xoxb") {
		t.Errorf("the Bash output: %q", bash.Output)
	}
	for _, id := range order {
		st := statuses[id]
		if st[0] != "in_progress" && st[0] != "pending" {
			t.Errorf("task %s began %s", id, st[0])
		}
	}
}

// Where the platform refuses task chunks, the turn shows the status line
// as before, and the refusal is remembered: the next turn does not ask
// again.
func TestTasksRefusedFallBackToTheStatusLine(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.slack.Errors = map[string]string{"chat.startStream": "invalid_chunks"}
	h.script(
		use("t1", "Grep", map[string]string{"pattern": "TODO"}),
		say("r1"),
		end,
		use("t2", "Grep", map[string]string{"pattern": "FIXME"}),
		say("r2"),
	)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "look"})
	h.expectReply("D0MGR", "100.1", "no matches")
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "again"})
	h.waitMetric(`agent_turns_total{outcome="ok"}`, 2)
	starts := 0
	for _, r := range h.slack.Requests() {
		if r.Method == "chat.startStream" {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("chat.startStream asked %d times, want once (the refusal remembered)", starts)
	}
	reading := 0
	for _, s := range h.slack.Statuses() {
		if s.Status == "is reading…" {
			reading++
		}
	}
	if reading != 2 {
		t.Errorf("status line %q shown %d times, want once per turn: %+v", "is reading…", reading, h.slack.Statuses())
	}
}

// A ten-step turn (ten tool calls, one per model answer, then the reply):
// its task updates are batched, at most two stream calls a step (a step's
// start; its end when the last update is older than a second) and the
// stop; on this fast fake (every step well under a second) each step's
// end goes out with the next step's start. The figures are logged for
// the README.
func TestTasksTenStepTurnCalls(t *testing.T) {
	h := newHarness(t, rulesSoul)
	var steps []func(string, bool) fake.AnthropicResponse
	for i := range 10 {
		steps = append(steps, use("t"+string(rune('a'+i)), "Grep", map[string]string{"pattern": "TODO" + string(rune('a'+i))}))
	}
	h.script(append(steps, say("r1"))...)
	h.start()
	h.slack.ForgetCalls()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "ten steps"})
	h.expectReply("D0MGR", "100.1", "no matches")
	h.waitMetric(`agent_turns_total{outcome="ok"}`, 1)
	if _, err := h.slack.WaitForStream(h.ctx(), func(p fake.Post) bool { return p.Method == "chat.stopStream" && p.Chunks != nil }); err != nil {
		t.Fatal(err)
	}
	byMethod := map[string]int{}
	for _, r := range h.slack.Requests() {
		byMethod[r.Method]++
	}
	streams := byMethod["chat.startStream"] + byMethod["chat.appendStream"] + byMethod["chat.stopStream"]
	t.Logf("ten-step turn: %d stream calls for its tasks; all platform calls: %v", streams, byMethod)
	if streams < 2 || streams > 2*10+2 {
		t.Errorf("%d stream calls, want between 2 and 22", streams)
	}
	_, _, last := taskStory(h.slack.TaskUpdates())
	if len(last) != 10 {
		t.Errorf("%d tasks, want 10", len(last))
	}
	for id, u := range last {
		if u.Status != "complete" {
			t.Errorf("task %s ended %s", id, u.Status)
		}
	}
}
