package agent

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// withMemories puts what a thread's first turn carries of memory
// (Options.FirstTurn) at the start of its last message, the person's: it
// is stored with it, so every later request of the thread repeats the same
// bytes and the prompt cache keeps serving them.
func (e *Engine) withMemories(ctx context.Context, t *pipeline.Turn, input []anthropic.MessageParam) []anthropic.MessageParam {
	if e.o.FirstTurn == nil || len(input) == 0 {
		return input
	}
	text := e.o.FirstTurn(ctx, t.Event.ChannelID, pipeline.StripMention(t.Event.Text, e.o.Self().UserID))
	if text == "" {
		return input
	}
	last := &input[len(input)-1]
	last.Content = append([]anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(text)}, last.Content...)
	return input
}
