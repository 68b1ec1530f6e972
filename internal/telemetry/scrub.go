package telemetry

import (
	"fmt"
	"io"
	"log/slog"

	secretset "github.com/persona-runtime/agent/pkg/secret"
)

// Redacted replaces every secret value in log output.
const Redacted = "[redacted]"

// scrubber replaces secret values, raw and base64-, hex- or URL-encoded
// (pkg/secret; values shorter than secretset.MinLen are left out: an
// unset or placeholder value such as "x" would blank out ordinary words).
// A nil *scrubber scrubs nothing.
type scrubber struct {
	set *secretset.Set
}

// newScrubber returns a scrubber for the secrets, or nil when none is long
// enough to look for.
func newScrubber(secrets []string) *scrubber {
	set := secretset.New(secrets...)
	if set.Empty() {
		return nil
	}
	return &scrubber{set: set}
}

func (s *scrubber) contains(text string) bool {
	return s != nil && s.set.Contains(text)
}

func (s *scrubber) replace(text string) string {
	return s.set.Replace(text, Redacted)
}

func (s *scrubber) string(text string) string {
	if !s.contains(text) {
		return text
	}
	return s.replace(text)
}

func (s *scrubber) attrs(as []slog.Attr) []slog.Attr {
	if s == nil {
		return as
	}
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = s.attr(a)
	}
	return out
}

func (s *scrubber) attr(a slog.Attr) slog.Attr {
	if s == nil {
		return a
	}
	// Resolve first, so that a LogValuer cannot hand the handler a secret
	// after scrubbing (slog resolves again, which is then a no-op).
	return slog.Attr{Key: a.Key, Value: s.value(a.Value.Resolve())}
}

func (s *scrubber) value(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		if str := v.String(); s.contains(str) {
			return slog.StringValue(s.replace(str))
		}
	case slog.KindGroup:
		return slog.GroupValue(s.attrs(v.Group())...)
	case slog.KindAny:
		// The handlers print an error with Error() (JSON) or %+v (text) and
		// any other value with %+v, a TextMarshaler or a JSON encoding.
		// Check the first two forms; a value that shows a secret in either
		// is replaced by its scrubbed text.
		x := v.Any()
		if err, ok := x.(error); ok {
			if text := err.Error(); s.contains(text) {
				return slog.StringValue(s.replace(text))
			}
		}
		if text := fmt.Sprintf("%+v", x); s.contains(text) {
			return slog.StringValue(s.replace(text))
		}
	}
	return v
}

// scrubWriter is the last line of defence behind the Handler: it scrubs the
// encoded record, which also covers values the Handler cannot see through
// (a MarshalJSON or MarshalText that reveals a secret). slog's built-in
// handlers write each record with one Write call, so a secret is never split
// across calls.
type scrubWriter struct {
	w io.Writer
	s *scrubber
}

func (sw scrubWriter) Write(p []byte) (int, error) {
	text := string(p)
	if !sw.s.contains(text) {
		return sw.w.Write(p)
	}
	if _, err := io.WriteString(sw.w, sw.s.replace(text)); err != nil {
		return 0, err
	}
	return len(p), nil
}
