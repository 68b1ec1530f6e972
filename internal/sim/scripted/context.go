package scripted

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// threadContext is what the context behaviour replies after "context: ":
// the thread's earlier messages the turn carries before the person's (the
// engine's unseen messages), one a line as "<@U…> (role): words" or "you:
// words" for the bot's own, counted, then the person's words:
//
//	2 earlier messages
//	<@U0ALICE> (member): the build is red
//	you: I saw the alert
//	now: what do we know?
//
// They are the envelopes and the assistant's plain words before the last
// envelope, back to the first runtime note, tool call or tool result.
func threadContext(msgs []anthropic.MessageParam, words string) string {
	var earlier []string // newest first
	last := true         // the next envelope met is the person's own
walk:
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		for j := len(m.Content) - 1; j >= 0; j-- {
			b := m.Content[j]
			switch {
			case b.OfToolResult != nil, b.OfToolUse != nil:
				break walk
			case b.OfText == nil:
			case m.Role == anthropic.MessageParamRoleAssistant:
				if !last {
					earlier = append(earlier, "you: "+b.OfText.Text)
				}
			default:
				id, role, w, ok := pipeline.ParseEnvelope(b.OfText.Text)
				switch {
				case ok && last:
					last = false
				case ok:
					earlier = append(earlier, "<@"+id+"> ("+role+"): "+w)
				case strings.HasPrefix(b.OfText.Text, memoryNote) && !last && len(earlier) > 0:
					// The envelope after a memory's line is the
					// memory's words, not an earlier message.
					earlier = earlier[:len(earlier)-1]
				case strings.HasPrefix(b.OfText.Text, "[runtime]") && !last:
					break walk
				}
			}
		}
	}
	slices.Reverse(earlier)
	head := "no earlier messages"
	switch len(earlier) {
	case 0:
	case 1:
		head = "1 earlier message"
	default:
		head = fmt.Sprintf("%d earlier messages", len(earlier))
	}
	return strings.Join(append(append([]string{head}, earlier...), "now: "+words), "\n")
}
