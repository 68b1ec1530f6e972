package telemetry

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
)

// Redacted replaces every secret value in log output.
const Redacted = "[redacted]"

// minSecret is the shortest secret scrubbed: shorter values (an unset or
// placeholder value such as "x" or "test") would blank out ordinary words.
// Real tokens are tens of characters long; internal/redact uses the same
// bound.
const minSecret = 8

// scrubber replaces secret values. A nil *scrubber scrubs nothing.
type scrubber struct {
	secrets  []string // distinct, longest first
	replacer *strings.Replacer
}

// newScrubber returns a scrubber for the secrets of at least minSecret
// bytes, or nil when there are none.
func newScrubber(secrets []string) *scrubber {
	seen := map[string]bool{}
	var kept []string
	for _, s := range secrets {
		if len(s) >= minSecret && !seen[s] {
			seen[s] = true
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	// Longest first: strings.Replacer tries the old strings in argument
	// order at each position, so a secret that contains another one is
	// replaced whole.
	sort.SliceStable(kept, func(i, j int) bool { return len(kept[i]) > len(kept[j]) })
	pairs := make([]string, 0, 2*len(kept))
	for _, s := range kept {
		pairs = append(pairs, s, Redacted)
	}
	return &scrubber{secrets: kept, replacer: strings.NewReplacer(pairs...)}
}

func (s *scrubber) contains(text string) bool {
	if s == nil {
		return false
	}
	for _, v := range s.secrets {
		if strings.Contains(text, v) {
			return true
		}
	}
	return false
}

func (s *scrubber) string(text string) string {
	if !s.contains(text) {
		return text
	}
	return s.replacer.Replace(text)
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
			return slog.StringValue(s.replacer.Replace(str))
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
				return slog.StringValue(s.replacer.Replace(text))
			}
		}
		if text := fmt.Sprintf("%+v", x); s.contains(text) {
			return slog.StringValue(s.replacer.Replace(text))
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
	dirty := false
	for _, v := range sw.s.secrets {
		if bytes.Contains(p, []byte(v)) {
			dirty = true
			break
		}
	}
	if !dirty {
		return sw.w.Write(p)
	}
	if _, err := io.WriteString(sw.w, sw.s.replacer.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
