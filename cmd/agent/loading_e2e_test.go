package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// The persona's "## Loading messages" go with the status line, as a real
// array (a message holding a comma stays whole), at most ten of them.
func TestLoadingMessagesWithTheStatus(t *testing.T) {
	var soul strings.Builder
	soul.WriteString(testSoul + "\n## Loading messages\n- Checking the calendar, then the notes…\n- Asking the release gods…\n")
	for i := range 10 {
		soul.WriteString("- extra " + string(rune('a'+i)) + "\n")
	}
	h := newHarness(t, soul.String())
	h.slack.Errors = map[string]string{"agents.sessions.setStatus": "unknown_method"} // the status line shows
	h.model.Enqueue(replyWith("done")...)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	st, err := h.slack.WaitForStatus(h.ctx(), func(s fake.Status) bool { return s.Status == "is thinking…" })
	if err != nil {
		t.Fatalf("no status: %v\nlogs:\n%s", err, h.logs)
	}
	want := []string{"Checking the calendar, then the notes…", "Asking the release gods…",
		"extra a", "extra b", "extra c", "extra d", "extra e", "extra f", "extra g", "extra h"}
	if !slices.Equal(st.LoadingMessages, want) {
		t.Errorf("loading messages %q, want %q", st.LoadingMessages, want)
	}
	h.expectReply("D0MGR", "100.1", "done")
}

// A DM thread whose session the platform made before the first message
// (setStatus's title applies only when it creates the session) is titled
// from that message with agents.sessions.rename; a session the first
// call creates is titled by that call, without a rename.
func TestSessionTitledByRename(t *testing.T) {
	h := newHarness(t, testSoul)
	h.model.Enqueue(replyWith("one")...)
	h.model.Enqueue(replyWith("two")...)
	h.start()
	h.slack.OpenSession("D0MGR", "100.1")
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "plan the release\nwith details"})
	h.expectReply("D0MGR", "100.1", "one")
	h.waitSession("D0MGR", "100.1", "active")
	renames := h.slack.Renames()
	if len(renames) != 1 || renames[0].Title != "plan the release" || renames[0].ThreadTS != "100.1" {
		t.Fatalf("renames %+v, want the thread titled %q", renames, "plan the release")
	}
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "200.1", Text: "another thread"})
	h.expectReply("D0MGR", "200.1", "two")
	h.waitSession("D0MGR", "200.1", "active")
	if got := h.slack.Renames(); len(got) != 1 {
		t.Errorf("a session created titled was renamed: %+v", got)
	}
}
