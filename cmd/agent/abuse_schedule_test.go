package main

import (
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/schedule"
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
