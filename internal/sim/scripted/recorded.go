package scripted

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Recorded is the behaviour of a model that plays a recorded thread's
// answers (a scenario's `model:`, written by `agent sim record`).
const Recorded = "recorded"

// Answer is one recorded model answer: its text, then its tool calls.
type Answer struct {
	Text  string     `yaml:"text,omitempty"`
	Tools []ToolCall `yaml:"tools,omitempty"`
}

// ToolCall is one tool call of an answer; Input is its JSON object.
type ToolCall struct {
	Name  string          `yaml:"name"`
	Input json.RawMessage `yaml:"-"`
}

// NewRecorded returns a model that plays turns: the answers of each turn
// of a recorded thread, in order. A turn is a request whose conversation
// ends in a person's message (an envelope); the answers of a turn are
// played one a call, by how many answers the conversation holds since that
// message; a turn past its answers ends (no content), and a turn past the
// recording is answered with nothing either: a replay that asks more than
// the recording holds shows in what it posts, not in a failure of the
// model.
func NewRecorded(turns [][]Answer) *Model {
	m := &Model{recorded: turns}
	m.behaviour.Store(Recorded)
	return m
}

// recordedAnswer is the answer the recorded model gives to msgs: the
// next of the current turn's.
func (m *Model) recordedAnswer(msgs []anthropic.MessageParam) *anthropic.Message {
	since, ok := answersSinceEnvelope(msgs)
	m.recMu.Lock()
	if ok && since == 0 {
		m.recTurn++
	}
	turn := m.recTurn - 1
	m.recMu.Unlock()
	end := &anthropic.Message{Role: "assistant", StopReason: anthropic.StopReasonEndTurn, Model: "stub"}
	if !ok || turn < 0 || turn >= len(m.recorded) || since >= len(m.recorded[turn]) {
		return end
	}
	a := m.recorded[turn][since]
	msg := &anthropic.Message{Role: "assistant", Model: "stub", StopReason: anthropic.StopReasonEndTurn}
	if a.Text != "" {
		msg.Content = append(msg.Content, anthropic.ContentBlockUnion{Type: "text", Text: a.Text})
	}
	for i, t := range a.Tools {
		input := t.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		msg.Content = append(msg.Content, anthropic.ContentBlockUnion{Type: "tool_use",
			ID: fmt.Sprintf("toolu_rec_%d_%d_%d", turn+1, since+1, i+1), Name: t.Name, Input: input})
		msg.StopReason = anthropic.StopReasonToolUse
	}
	return msg
}

// answersSinceEnvelope counts the assistant messages after the last user
// message that carries a person's words (an envelope); ok is false when
// there is none.
func answersSinceEnvelope(msgs []anthropic.MessageParam) (int, bool) {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := decoded(msgs[i])
		if m.Role == anthropic.MessageParamRoleAssistant {
			n++
			continue
		}
		for _, b := range m.Content {
			if b.OfText != nil {
				if _, _, _, ok := pipeline.ParseEnvelope(b.OfText.Text); ok {
					return n, true
				}
			}
		}
	}
	return 0, false
}
