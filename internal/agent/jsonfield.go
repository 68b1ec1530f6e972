package agent

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// fieldStream decodes, from the pieces of a JSON object as they are
// written (a tool call's streamed input), the value of one top-level
// string field, as far as it has arrived. Pieces may split anywhere: in an
// escape, in a \u sequence, between a surrogate pair's halves.
type fieldStream struct {
	key string

	depth       int
	inString    bool
	escape      bool
	hex         []byte // the digits of a \u escape so far
	high        rune   // a high surrogate waiting for its low half
	expectKey   bool
	expectValue bool
	isKey       bool
	capturing   bool
	curKey      strings.Builder
	lastKey     string
}

func newFieldStream(key string) *fieldStream { return &fieldStream{key: key} }

// Write consumes piece and returns the field's text it completed.
func (f *fieldStream) Write(piece string) string {
	var out strings.Builder
	emit := func(r rune) {
		if f.capturing {
			out.WriteRune(r)
		} else if f.isKey {
			f.curKey.WriteRune(r)
		}
	}
	for i := 0; i < len(piece); i++ {
		c := piece[i]
		if f.inString {
			switch {
			case f.hex != nil:
				f.hex = append(f.hex, c)
				if len(f.hex) < 4 {
					continue
				}
				r := hexRune(f.hex)
				f.hex = nil
				switch {
				case utf16.IsSurrogate(r) && r < 0xDC00:
					f.high = r
				case f.high != 0:
					emit(utf16.DecodeRune(f.high, r))
					f.high = 0
				default:
					emit(r)
				}
			case f.escape:
				f.escape = false
				if c == 'u' {
					f.hex = make([]byte, 0, 4)
					continue
				}
				emit(map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[c])
			case c == '\\':
				f.escape = true
			case c == '"':
				f.inString = false
				if f.isKey {
					f.lastKey, f.isKey = f.curKey.String(), false
				}
				f.capturing = false
			default:
				// A multi-byte character may be split across pieces: its
				// bytes are written as they come.
				if f.capturing {
					out.WriteByte(c)
				} else if f.isKey {
					f.curKey.WriteByte(c)
				}
			}
			continue
		}
		switch c {
		case '{', '[':
			f.depth++
			f.expectKey = f.depth == 1 && c == '{'
			f.expectValue = false
		case '}', ']':
			f.depth--
		case ',':
			f.expectKey = f.depth == 1
		case ':':
			f.expectValue = f.depth == 1
		case '"':
			f.inString = true
			switch {
			case f.depth == 1 && f.expectKey:
				f.isKey, f.expectKey = true, false
				f.curKey.Reset()
			case f.depth == 1 && f.expectValue:
				f.capturing = f.lastKey == f.key
				f.expectValue = false
			}
		case ' ', '\t', '\n', '\r':
		default:
			if f.depth == 1 {
				f.expectValue = false
			}
		}
	}
	return out.String()
}

func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return utf8.RuneError
		}
	}
	return r
}
