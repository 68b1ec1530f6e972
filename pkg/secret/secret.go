// Package secret finds credential values in text, raw and in the encodings
// a command would print them in: base64 (standard and URL-safe alphabets,
// padded or not, at any byte offset of the encoded stream, wrapped at any
// width), hex (lower and upper case, wrapped or not) and URL encoding. It
// is what every redactor of the runtime matches known values with.
package secret

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
)

// MinLen is the shortest value a Set looks for: shorter values (an unset
// or placeholder value such as "x") would hit ordinary words.
const MinLen = 8

// form is one way a value may show in text.
type form struct {
	text    string
	encoded bool // hex or base64: may be wrapped across lines
	base64  bool // a base64 core: its neighbours may carry a few of its bits
}

// Set is a set of secret values and their encoded forms. The zero value and
// nil match nothing. A Set is immutable and safe for concurrent use.
type Set struct {
	forms  []form // distinct, longest first
	maxLen int
}

// New returns the Set of values of at least MinLen bytes.
func New(values ...string) *Set {
	s := &Set{}
	seen := map[string]bool{}
	add := func(f form) {
		if len(f.text) < MinLen || seen[f.text] {
			return
		}
		seen[f.text] = true
		s.forms = append(s.forms, f)
	}
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		add(form{text: v})
		add(form{text: url.QueryEscape(v)})
		add(form{text: url.PathEscape(v)})
		h := hex.EncodeToString([]byte(v))
		add(form{text: h, encoded: true})
		add(form{text: strings.ToUpper(h), encoded: true})
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			for k := range 3 {
				add(form{text: base64Core(enc, v, k), encoded: true, base64: true})
			}
		}
	}
	slices.SortStableFunc(s.forms, func(a, b form) int { return len(b.text) - len(a.text) })
	for _, f := range s.forms {
		s.maxLen = max(s.maxLen, len(f.text))
	}
	return s
}

// base64Core is the part of the base64 encoding of v, when v starts k
// bytes into the encoded stream, that depends on v's bytes alone: the
// characters before and after it mix in bits of the neighbouring bytes.
// Character i covers bits [6i, 6i+6) of the stream; v covers [8k, 8(k+n)).
func base64Core(enc *base64.Encoding, v string, k int) string {
	stream := make([]byte, k+len(v))
	copy(stream[k:], v)
	full := enc.EncodeToString(stream)
	first := (8*k + 5) / 6 // the first i with 6i >= 8k
	last := (8 * (k + len(v))) / 6
	if last > len(full) {
		last = len(full)
	}
	if first >= last {
		return ""
	}
	return full[first:last]
}

// MaxLen is the length of the longest form, unwrapped.
func (s *Set) MaxLen() int {
	if s == nil {
		return 0
	}
	return s.maxLen
}

// Window is how many bytes of text a form may span once spread out (a
// space between every two hex digits, or a line break every 32 characters
// as CRLF or its JSON escape): a buffer that keeps this much around a cut
// cannot split a form unseen.
func (s *Set) Window() int {
	n := s.MaxLen()
	return n + n/2 + 8
}

// Empty reports whether s looks for nothing.
func (s *Set) Empty() bool { return s == nil || len(s.forms) == 0 }

// Spans returns the byte ranges [start, end) of text that show a value in
// some form, sorted and merged. A base64 match is widened over up to two
// base64 characters each side (they carry bits of the value); a wrapped
// match covers the line breaks and spaces inside it.
func (s *Set) Spans(text string) [][2]int {
	if s.Empty() || len(text) < MinLen {
		return nil
	}
	var spans [][2]int
	gap := hasGap(text)
	for _, f := range s.forms {
		if f.encoded && gap {
			continue // found in the view below, gaps or not
		}
		for i := 0; ; {
			j := strings.Index(text[i:], f.text)
			if j < 0 {
				break
			}
			a, b := i+j, i+j+len(f.text)
			if f.base64 {
				a, b = widen(text, a, b)
			}
			spans = append(spans, [2]int{a, b})
			i = i + j + len(f.text)
		}
	}
	if gap {
		spans = append(spans, s.wrapped(text)...)
	}
	return merge(spans)
}

// wrapped finds the encoded forms in text with its line breaks, spaces and
// tabs (and their JSON escapes) taken out — base64 wrapped at 76 columns,
// `xxd -p` at 60, hex bytes apart as `od` prints them — and maps each match
// back to text.
func (s *Set) wrapped(text string) [][2]int {
	view := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		if n := gapAt(text, i); n > 0 {
			i += n - 1
			continue
		}
		view = append(view, text[i])
	}
	v := string(view)
	var spans [][2]int
	for _, f := range s.forms {
		if !f.encoded {
			continue
		}
		for i := 0; ; {
			j := strings.Index(v[i:], f.text)
			if j < 0 {
				break
			}
			a, b := mapBack(text, i+j, i+j+len(f.text))
			if f.base64 {
				a, b = widen(text, a, b)
			}
			spans = append(spans, [2]int{a, b})
			i = i + j + len(f.text)
		}
	}
	return spans
}

// gapAt is the length of the gap (a line break, a space, a tab, or the
// JSON escape of one) at text[i], 0 when there is none.
func gapAt(text string, i int) int {
	switch c := text[i]; {
	case c == '\n' || c == '\r' || c == ' ' || c == '\t':
		return 1
	case c == '\\' && i+1 < len(text) && (text[i+1] == 'n' || text[i+1] == 'r' || text[i+1] == 't'):
		return 2
	}
	return 0
}

// mapBack turns [va, vb) of the gapless view of text into the range of
// text it came from. Matches are rare: a scan per match is cheap.
func mapBack(text string, va, vb int) (int, int) {
	a, b, n := -1, len(text), 0
	for i := 0; i < len(text); i++ {
		if g := gapAt(text, i); g > 0 {
			i += g - 1
			continue
		}
		if n == va {
			a = i
		}
		if n == vb-1 {
			b = i + 1
			break
		}
		n++
	}
	return a, b
}

// hasGap reports whether text holds a line break, a space or a tab, or
// the JSON escape of one: what may separate the pieces of an encoding.
func hasGap(text string) bool {
	return strings.ContainsAny(text, "\r\n \t") || strings.Contains(text, `\n`) || strings.Contains(text, `\r`) ||
		strings.Contains(text, `\t`)
}

// widen extends [a, b) over up to two base64 characters on each side and
// the padding after it.
func widen(text string, a, b int) (int, int) {
	for n := 0; n < 2 && a > 0 && isBase64(text[a-1]); n++ {
		a--
	}
	for n := 0; n < 2 && b < len(text) && isBase64(text[b]); n++ {
		b++
	}
	for n := 0; n < 2 && b < len(text) && text[b] == '='; n++ {
		b++
	}
	return a, b
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '+' || c == '/' || c == '-' || c == '_'
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans [][2]int) [][2]int {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(x, y [2]int) int { return x[0] - y[0] })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Contains reports whether text shows a value in some form.
func (s *Set) Contains(text string) bool {
	if s.Empty() {
		return false
	}
	gap := hasGap(text)
	for _, f := range s.forms {
		if !(f.encoded && gap) && strings.Contains(text, f.text) {
			return true
		}
	}
	return gap && len(s.wrapped(text)) > 0
}

// Replace returns text with every span that shows a value replaced by
// marker.
func (s *Set) Replace(text, marker string) string {
	spans := s.Spans(text)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, sp := range spans {
		b.WriteString(text[at:sp[0]])
		b.WriteString(marker)
		at = sp[1]
	}
	b.WriteString(text[at:])
	return b.String()
}
