package agent

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// streamAfter is how long a reply's input must have been arriving before
// it is shown while it is written: a reply the model writes in one go is
// simply posted, as before.
const streamAfter = 250 * time.Millisecond

// minHoldback is the least tail of a streamed reply held back from the
// thread when the engine is given no Settled, so that a credential cut
// between two pieces is never shown: redaction sees it whole first.
const minHoldback = 64

// heldBack is the rule without a Settled: redact, then hold back a tail
// as long as the longest credential form. It cannot see a pattern that
// spans more than the tail (a PEM key's lines).
func heldBack(redact func(string) string, holdback int) func(string) string {
	return func(text string) string {
		red := redact(text)
		if n := len(red) - holdback; n > 0 {
			return red[:n]
		}
		return ""
	}
}

// replyStreams shows the replies of one model call while the model writes
// them (the text input of mcp__agent_chat__reply, decoded as it comes),
// redacted, at a bounded rate. It is the call's llm.ToolInputObserver.
type replyStreams struct {
	ctx      context.Context
	streamer pipeline.Streamer
	// ready waits for the turn's first status call: nothing the turn
	// shows may precede it.
	ready func()
	// settled is the part of a reply's text, redacted, that no text still
	// to come can change (redact.Redactor.Settled).
	settled func(string) string
	now     func() time.Time

	mu    sync.Mutex
	calls map[string]*replyCall // by tool_use id
}

// replyCall is one reply being written.
type replyCall struct {
	dec    *fieldStream
	text   strings.Builder
	begun  time.Time
	last   time.Time
	stream pipeline.ReplyStream
	failed bool
}

var _ llm.ToolInputObserver = (*replyStreams)(nil)

func (r *replyStreams) ToolInputStart(id, name string) {
	if name != tools.ChatReply {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[id] = &replyCall{dec: newFieldStream("text"), begun: r.now()}
}

func (r *replyStreams) ToolInputDelta(id, partial string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls[id]
	if c == nil || c.failed {
		return
	}
	c.text.WriteString(c.dec.Write(partial))
	now := r.now()
	if now.Sub(c.begun) < streamAfter {
		return
	}
	if c.stream != nil && now.Sub(c.last) < c.stream.Interval() {
		return
	}
	shown := r.safe(c.text.String())
	if strings.TrimSpace(shown) == "" {
		return
	}
	if c.stream == nil {
		c.stream = r.streamer.StartStream()
	}
	if r.ready != nil {
		r.ready()
	}
	if err := c.stream.Preview(r.ctx, shown); err != nil {
		c.failed = true // the final text is posted or edited as usual
	}
	c.last = now
}

func (r *replyStreams) ToolInputEnd(string) {}

// safe is the part of text that may be shown now: redacted, less what
// text still to come may turn into a credential or a redacted match, cut
// at a rune and, where it can, a word.
func (r *replyStreams) safe(text string) string {
	red := r.settled(text)
	for len(red) > 0 && !utf8.ValidString(red) {
		red = red[:len(red)-1]
	}
	if i := strings.LastIndexAny(red, " \n"); i > 0 {
		red = red[:i+1]
	}
	return red
}

// stream returns the started stream of the reply call id, or nil.
func (r *replyStreams) stream(id string) pipeline.ReplyStream {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.calls[id]; c != nil && c.stream != nil && c.stream.Started() && !c.failed {
		return c.stream
	}
	return nil
}

// stopAll ends the streams no reply finished (a call that failed).
func (r *replyStreams) stopAll(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c.stream != nil {
			c.stream.Stop(ctx)
		}
	}
}

// streamOutbox is the turn's Outbox for a reply that was streamed: its
// post finishes the stream instead of posting again.
type streamOutbox struct {
	pipeline.Outbox
	stream pipeline.ReplyStream
}

func (s streamOutbox) Post(ctx context.Context, markdown string) (string, error) {
	return s.stream.Finish(ctx, markdown)
}
