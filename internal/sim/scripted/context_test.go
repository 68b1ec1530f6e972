package scripted

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestContextBehaviour(t *testing.T) {
	m, err := New("context")
	if err != nil {
		t.Fatal(err)
	}
	text := func(s string) anthropic.ContentBlockParamUnion { return anthropic.NewTextBlock(s) }
	// An earlier turn, then the unseen messages (the bot's own among them)
	// merged after its tool result, then the person's message.
	msgs := []anthropic.MessageParam{
		user(pipeline.Envelope("U1", "member", "first")), used("a", "x"),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock("a", "posted (ts 1)", false),
			text("[runtime] Messages of this thread you had not seen."),
			text(pipeline.Envelope("U0ALICE", "member", "the build is red"))),
		anthropic.NewAssistantMessage(text("I saw the alert")),
		anthropic.NewUserMessage(text(pipeline.Envelope("B0CI", "bot", "CI: failed")),
			text(pipeline.Envelope("U0MGR", "manager", "what do we know?"))),
	}
	replied := func(resp *anthropic.Message) string {
		t.Helper()
		var in struct{ Text string }
		if len(resp.Content) != 1 || json.Unmarshal(resp.Content[0].Input, &in) != nil {
			t.Fatalf("reply = %+v", resp.Content)
		}
		return in.Text
	}
	want := "context: 3 earlier messages\n<@U0ALICE> (member): the build is red\nyou: I saw the alert\n" +
		"<@B0CI> (bot): CI: failed\nnow: what do we know?"
	if got := replied(send(t, m, msgs...)); got != want {
		t.Errorf("reply = %q, want %q", got, want)
	}
	if got := replied(send(t, m, user(pipeline.Envelope("U1", "member", "hello")))); got != "context: no earlier messages\nnow: hello" {
		t.Errorf("without context: %q", got)
	}
	// The memories a first turn carries are not earlier messages.
	first := anthropic.NewUserMessage(append(carried(), text(pipeline.Envelope("U1", "member", "hello")))...)
	if got := replied(send(t, m, first)); got != "context: no earlier messages\nnow: hello" {
		t.Errorf("with memories: %q", got)
	}
}
