package agent

import (
	"encoding/json"
	"testing"
)

// However the input is cut, the field decodes to what encoding/json reads.
func TestFieldStream(t *testing.T) {
	for _, text := range []string{
		"plain words",
		"quotes \" and \\ backslash / slash\nnew line\ttab",
		"unicode é ü 日本語 and an emoji 😀 (a surrogate pair when escaped)",
		"<@U0MGR> & <html>",
		"",
	} {
		for _, input := range []string{
			mustJSON(map[string]any{"text": text}),
			`{ "other" : {"text": "not this", "n": [1, "x\"y"]}, "n": 12, "text" : ` + mustJSON(text) + `, "after": true }`,
			`{"text":"` + asciiEscaped(text) + `"}`,
		} {
			for cut := 1; cut <= 7; cut++ {
				f := newFieldStream("text")
				got := ""
				for i := 0; i < len(input); i += cut {
					got += f.Write(input[i:min(i+cut, len(input))])
				}
				if got != text {
					t.Errorf("cut %d of %s: %q, want %q", cut, input, got, text)
				}
			}
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// asciiEscaped is s as a JSON string body with every non-ASCII rune as
// \uXXXX (pairs for the astral plane), as some encoders write it.
func asciiEscaped(s string) string {
	b := mustJSON(s)
	out := ""
	for _, r := range b[1 : len(b)-1] {
		if r < 128 {
			out += string(r)
			continue
		}
		for _, u := range utf16Encode(r) {
			out += "\\u" + hex4(u)
		}
	}
	return out
}

func utf16Encode(r rune) []uint16 {
	if r < 0x10000 {
		return []uint16{uint16(r)}
	}
	r -= 0x10000
	return []uint16{uint16(0xD800 + (r >> 10)), uint16(0xDC00 + (r & 0x3FF))}
}

func hex4(u uint16) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[u>>12], digits[(u>>8)&15], digits[(u>>4)&15], digits[u&15]})
}
