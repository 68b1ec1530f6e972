package telemetry

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Keys of the trace correlation attributes added to each record.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
)

// NewLogger returns the service's logger writing to w: format "text" selects
// slog's text handler, anything else JSON. Records below level are dropped.
// Every non-empty secret of at least 8 bytes is replaced by Redacted in the
// message, in every attribute (groups and error values included) and, as a
// last resort, in the encoded line; records logged with a …Context method
// carry trace_id and span_id when the context holds a valid span.
func NewLogger(w io.Writer, format string, level slog.Level, secrets ...string) *slog.Logger {
	if w == nil {
		w = io.Discard
	}
	s := newScrubber(secrets)
	if s != nil {
		w = scrubWriter{w: w, s: s}
	}
	opts := &slog.HandlerOptions{Level: level}
	var inner slog.Handler
	if strings.EqualFold(strings.TrimSpace(format), "text") {
		inner = slog.NewTextHandler(w, opts)
	} else {
		inner = slog.NewJSONHandler(w, opts)
	}
	return slog.New(&Handler{inner: inner, scrub: s})
}

// ParseLevel returns the level named by s: debug, info, warn (or warning),
// error, case-insensitive, or slog's own forms such as "info+2". Anything
// else is info, so a typo in the environment never silences the logs.
func ParseLevel(s string) slog.Level {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "warning" {
		return slog.LevelWarn
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}

// Handler is a slog.Handler that wraps another one: it scrubs secret values
// from each record's message and attributes (and from those given to
// WithAttrs), and adds trace_id and span_id from the context's span.
//
// The trace attributes stay at the top level of the record even under
// WithGroup: the Handler keeps the groups opened on it, and the attributes
// added after them, itself and nests the record's attributes into them when
// it handles the record.
type Handler struct {
	inner slog.Handler
	scrub *scrubber
	// open are the groups opened on the Handler and the attributes added
	// inside them, outermost first. Attributes added before the first group
	// go to inner directly.
	open []groupOrAttrs
}

// groupOrAttrs is a group opened with WithGroup (name set) or the
// attributes of a WithAttrs call inside it.
type groupOrAttrs struct {
	name  string
	attrs []slog.Attr
}

var _ slog.Handler = (*Handler)(nil)

// NewHandler returns a Handler wrapping inner that scrubs secrets (values
// shorter than 8 bytes are ignored). A nil inner discards every record.
func NewHandler(inner slog.Handler, secrets ...string) *Handler {
	if inner == nil {
		inner = slog.DiscardHandler
	}
	return &Handler{inner: inner, scrub: newScrubber(secrets)}
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle scrubs r, adds the trace attributes and passes it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	attrs := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, h.scrub.attr(a))
		return true
	})
	for i := len(h.open) - 1; i >= 0; i-- {
		g := h.open[i]
		if g.name == "" {
			attrs = append(append([]slog.Attr(nil), g.attrs...), attrs...)
			continue
		}
		// An empty group is left out by the handlers, as slog requires.
		attrs = []slog.Attr{{Key: g.name, Value: slog.GroupValue(attrs...)}}
	}
	out := slog.NewRecord(r.Time, r.Level, h.scrub.string(r.Message), r.PC)
	out.AddAttrs(attrs...)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		out.AddAttrs(slog.String(TraceIDKey, sc.TraceID().String()), slog.String(SpanIDKey, sc.SpanID().String()))
	}
	return h.inner.Handle(ctx, out)
}

// WithAttrs returns a Handler whose records carry attrs, scrubbed.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	attrs = h.scrub.attrs(attrs)
	if len(h.open) == 0 {
		return &Handler{inner: h.inner.WithAttrs(attrs), scrub: h.scrub}
	}
	return h.with(groupOrAttrs{attrs: attrs})
}

// WithGroup returns a Handler that nests the attributes added after it
// under name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(groupOrAttrs{name: name})
}

func (h *Handler) with(g groupOrAttrs) *Handler {
	open := make([]groupOrAttrs, len(h.open), len(h.open)+1)
	copy(open, h.open)
	return &Handler{inner: h.inner, scrub: h.scrub, open: append(open, g)}
}
