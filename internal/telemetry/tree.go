package telemetry

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TreePrinter is a span processor that prints each trace, when its root
// span ends, as an indented tree: one span a line, indented by depth, with
// its duration, attributes, events (a drop and its reason) and error.
// It needs no collector: `agent dev --trace`, `agent sim run --trace` and
// OTEL_TRACES_EXPORTER=console use it.
//
//	chat.event 4.1ms  event_id=Ev1 kind=message messaging.system=slack …
//	  pipeline.drop 0.1ms  outcome=pass
//	  pipeline.agent 3.2ms  outcome=done
//	    llm.request 2.0ms  gen_ai.request.model=… gen_ai.usage.input_tokens=…
//	    tool.mcp__agent_chat__reply 0.6ms  tool=… outcome=ok
//	      chat.post 0.3ms
type TreePrinter struct {
	w io.Writer
	// Duration formats a span's duration; tests make it constant.
	Duration func(time.Duration) string

	mu      sync.Mutex
	pending map[trace.TraceID][]sdktrace.ReadOnlySpan
	done    map[trace.TraceID]bool // printed: late spans are dropped
	order   []trace.TraceID        // of done, oldest first, to bound it
}

// treeDone bounds how many printed traces are remembered.
const treeDone = 1024

// NewTreePrinter returns a TreePrinter writing to w.
func NewTreePrinter(w io.Writer) *TreePrinter {
	return &TreePrinter{w: w, pending: map[trace.TraceID][]sdktrace.ReadOnlySpan{}, done: map[trace.TraceID]bool{}}
}

var _ sdktrace.SpanProcessor = (*TreePrinter)(nil)

// OnStart implements sdktrace.SpanProcessor.
func (p *TreePrinter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: it keeps the span, and prints
// the trace when its root ends.
func (p *TreePrinter) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().TraceID()
	p.mu.Lock()
	if p.done[id] {
		p.mu.Unlock()
		return
	}
	spans := append(p.pending[id], s)
	root := !s.Parent().IsValid() || s.Parent().IsRemote()
	if !root {
		p.pending[id] = spans
		p.mu.Unlock()
		return
	}
	delete(p.pending, id)
	p.done[id] = true
	p.order = append(p.order, id)
	if len(p.order) > treeDone {
		delete(p.done, p.order[0])
		p.order = p.order[1:]
	}
	text := p.render(s, spans)
	_, _ = io.WriteString(p.w, text) // under the lock: trees do not interleave
	p.mu.Unlock()
}

// Shutdown implements sdktrace.SpanProcessor.
func (p *TreePrinter) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (p *TreePrinter) ForceFlush(context.Context) error { return nil }

// render draws the tree under root.
func (p *TreePrinter) render(root sdktrace.ReadOnlySpan, spans []sdktrace.ReadOnlySpan) string {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s != root {
			children[s.Parent().SpanID()] = append(children[s.Parent().SpanID()], s)
		}
	}
	for _, c := range children {
		slices.SortStableFunc(c, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	}
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(p.line(s))
		b.WriteByte('\n')
		for _, c := range children[s.SpanContext().SpanID()] {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	return b.String()
}

// line is one span: name, duration, attributes, events, error.
func (p *TreePrinter) line(s sdktrace.ReadOnlySpan) string {
	dur := p.Duration
	if dur == nil {
		dur = formatDuration
	}
	var b strings.Builder
	b.WriteString(s.Name())
	b.WriteByte(' ')
	b.WriteString(dur(s.EndTime().Sub(s.StartTime())))
	if attrs := s.Attributes(); len(attrs) > 0 {
		b.WriteString(" ")
		for _, kv := range attrs {
			b.WriteString(" " + string(kv.Key) + "=" + attrValue(kv.Value))
		}
	}
	for _, ev := range s.Events() {
		if ev.Name == "exception" {
			continue // the status says it
		}
		b.WriteString(" [" + ev.Name)
		for _, kv := range ev.Attributes {
			b.WriteString(" " + string(kv.Key) + "=" + attrValue(kv.Value))
		}
		b.WriteString("]")
	}
	if st := s.Status(); st.Code == codes.Error {
		b.WriteString(" ERROR: " + st.Description)
	}
	return b.String()
}

// attrValue renders a value on one line, quoted when it holds spaces.
func attrValue(v attribute.Value) string {
	s := v.Emit()
	if v.Type() == attribute.STRINGSLICE {
		s = strings.Join(v.AsStringSlice(), ",")
	}
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	if strings.ContainsAny(s, " \t") || s == "" {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// formatDuration is a duration in milliseconds with one decimal.
func formatDuration(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
