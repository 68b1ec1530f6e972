package agent

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// withMemories puts what a thread's first turn carries of memory
// (Options.FirstTurn), one text block each, at the start of its last
// message, the person's: it
// is stored with it, so every later request of the thread repeats the same
// bytes and the prompt cache keeps serving them.
func (e *Engine) withMemories(ctx context.Context, t *pipeline.Turn, input []anthropic.MessageParam) []anthropic.MessageParam {
	if e.o.FirstTurn == nil || len(input) == 0 {
		return input
	}
	texts := e.o.FirstTurn(ctx, t.Event.ChannelID, pipeline.StripMention(t.Event.Text, e.o.Self().UserID))
	if len(texts) == 0 {
		return input
	}
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(texts)+len(input[len(input)-1].Content))
	for _, text := range texts {
		blocks = append(blocks, anthropic.NewTextBlock(text))
	}
	last := &input[len(input)-1]
	last.Content = append(blocks, last.Content...)
	return input
}
