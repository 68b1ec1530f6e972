package agent_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

const memoryBlock = "[runtime] Memories that may help (the recall tool finds more):\n- maaaaaaaa (2025-11-22): we deploy on Tuesdays"

// firstRequests runs two turns of one thread with first (nil: no memory)
// and returns the model's first request of each turn and how often first was
// asked.
func firstRequests(t *testing.T, first func(ctx context.Context, channelID, text string) string) ([]fake.AnthropicRequest, []string) {
	t.Helper()
	var asked []string
	c := config{thread: threadPrompt}
	if first != nil {
		c.firstTurn = func(ctx context.Context, channelID, text string) string {
			asked = append(asked, channelID+" "+text)
			return first(ctx, channelID, text)
		}
	}
	e := newEnv(t, c)
	e.fake.Enqueue(reply("Tuesdays."), fake.TextReply("Done."), reply("Yes."), fake.TextReply("Done."))
	for _, words := range []string{"<@" + botID + "> when do we deploy?", "sure?"} {
		turn, _ := e.turn(t, "1.0", words, pipeline.RoleMember)
		if err := e.engine.Turn(t.Context(), turn); err != nil {
			t.Fatalf("Turn: %v", err)
		}
	}
	reqs := e.fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("requests = %d, want 4", len(reqs))
	}
	return []fake.AnthropicRequest{reqs[0], reqs[2]}, asked
}

// A thread's first turn carries the memories found for it in its messages,
// before the person's words, once: the cached prefix (tools, system) is
// byte-identical to a turn without them, and the next turn repeats the
// same bytes from the history. Nothing found adds nothing.
func TestFirstTurnMemories(t *testing.T) {
	plain, _ := firstRequests(t, nil)
	with, asked := firstRequests(t, func(context.Context, string, string) string { return memoryBlock })
	if len(asked) != 1 || !strings.HasSuffix(asked[0], " when do we deploy?") {
		t.Errorf("memories asked for %q, want once, for the first message without the mention", asked)
	}
	for i := range 2 {
		if !bytes.Equal(plain[i].Tools, with[i].Tools) || !bytes.Equal(plain[i].System, with[i].System) {
			t.Errorf("request %d: the cached prefix changed with memories", i)
		}
	}
	first := with[0].ParsedMessages()
	if len(first) != 1 || len(first[0].Content) < 2 || first[0].Content[0].Text != memoryBlock ||
		!strings.Contains(first[0].Content[1].Text, "when do we deploy?") {
		t.Fatalf("first request's messages = %+v, want the memories then the person's words", first)
	}
	second := with[1].ParsedMessages()
	if second[0].Content[0].Text != memoryBlock {
		t.Errorf("the second turn's history lost the memories: %+v", second[0])
	}
	if strings.Count(string(with[1].Messages), "we deploy on Tuesdays") != 1 {
		t.Errorf("the memories were carried more than once: %s", with[1].Messages)
	}
	writeGolden(t, "request_memory.golden", with[0])

	none, _ := firstRequests(t, func(context.Context, string, string) string { return "" })
	for i := range 2 {
		if !bytes.Equal(plain[i].Messages, none[i].Messages) {
			t.Errorf("request %d: nothing found still changed the messages:\n%s\n%s", i, plain[i].Messages, none[i].Messages)
		}
	}
}
