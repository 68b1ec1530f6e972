package golden

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// ToolCall is one tool call the engine reported, placed after the
// transcript entries that existed when it ended.
type ToolCall struct {
	After int // len(transcript) when the call ended
	Line  string
}

// ToolLine renders a tool call: the tool, its input (redacted, on one
// line, cut at 160 characters) and its outcome with the first line of its
// result.
func ToolLine(name, input, result, outcome string) string {
	// The model's JSON as a person writes it: no \u003c for "<".
	var v any
	if json.Unmarshal([]byte(input), &v) == nil {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			input = strings.TrimSpace(b.String())
		}
	}
	line := "tool " + name + " " + OneLine(input, 160) + " → " + outcome
	if r := OneLine(result, 100); r != "" {
		line += ": " + r
	}
	return line
}

// OneLine is s on one line (newlines and tabs as spaces), cut to n
// characters with "…".
func OneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}
