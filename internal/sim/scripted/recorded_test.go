package scripted

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The recorded model plays each turn's answers in order, one a call, ends
// a turn past its answers, and starts the next turn's at the next
// person's message.
func TestRecordedPlaysTurns(t *testing.T) {
	m := NewRecorded([][]Answer{
		{{Tools: []ToolCall{{Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}}}, {Text: "done"}},
		{{Tools: []ToolCall{{Name: "mcp__agent_chat__reply", Input: json.RawMessage(`{"text":"second"}`)}}}},
	})
	one := user(pipeline.Envelope("U1", "member", "first"))
	r := send(t, m, one)
	if r.StopReason != anthropic.StopReasonToolUse || len(r.Content) != 1 || r.Content[0].Name != "Bash" || string(r.Content[0].Input) != `{"command":"ls"}` {
		t.Fatalf("turn 1 answer 1: %+v", r)
	}
	r = send(t, m, one, used("a", "Bash"), result("a", "x"))
	if r.StopReason != anthropic.StopReasonEndTurn || len(r.Content) != 1 || r.Content[0].Text != "done" {
		t.Fatalf("turn 1 answer 2: %+v", r)
	}
	r = send(t, m, one, used("a", "Bash"), result("a", "x"), anthropic.NewAssistantMessage(anthropic.NewTextBlock("done")), result("b", "y"))
	if r.StopReason != anthropic.StopReasonEndTurn || len(r.Content) != 0 {
		t.Fatalf("turn 1 past its answers: %+v", r)
	}
	two := user(pipeline.Envelope("U1", "member", "again"))
	r = send(t, m, one, used("a", "Bash"), result("a", "x"), two)
	if len(r.Content) != 1 || r.Content[0].Name != "mcp__agent_chat__reply" {
		t.Fatalf("turn 2: %+v", r)
	}
	r = send(t, m, two)
	if len(r.Content) != 0 || r.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("past the recording: %+v", r)
	}
}
