package llm

import (
	"context"
)

// ToolInputObserver is told, while a streamed answer arrives, of the tool
// calls the model is writing: each call's start, the pieces of its JSON
// input as they come, and its end. A retried attempt starts over with new
// calls. Calls are made from the goroutine that reads the stream.
type ToolInputObserver interface {
	ToolInputStart(id, name string)
	ToolInputDelta(id, partialJSON string)
	ToolInputEnd(id string)
}

type observerKey struct{}

// WithToolInputObserver returns ctx carrying o for the model calls made
// with it.
func WithToolInputObserver(ctx context.Context, o ToolInputObserver) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// streamWatch follows one stream's tool_use blocks for the observer.
type streamWatch struct {
	o   ToolInputObserver
	ids map[int64]string // block index → tool_use id
}

func newStreamWatch(ctx context.Context) *streamWatch {
	o, _ := ctx.Value(observerKey{}).(ToolInputObserver)
	if o == nil {
		return nil
	}
	return &streamWatch{o: o, ids: map[int64]string{}}
}

func (w *streamWatch) event(ev *streamEvent, blocks []*blockAcc) {
	if w == nil {
		return
	}
	switch ev.Type {
	case "content_block_start":
		if b := blocks[ev.Index]; b.head.Type == "tool_use" {
			w.ids[ev.Index] = b.head.ID
			w.o.ToolInputStart(b.head.ID, b.head.Name)
		}
	case "content_block_delta":
		if id, ok := w.ids[ev.Index]; ok && ev.Delta.Type == "input_json_delta" && ev.Delta.PartialJSON != "" {
			w.o.ToolInputDelta(id, ev.Delta.PartialJSON)
		}
	case "content_block_stop":
		if id, ok := w.ids[ev.Index]; ok {
			delete(w.ids, ev.Index)
			w.o.ToolInputEnd(id)
		}
	}
}
