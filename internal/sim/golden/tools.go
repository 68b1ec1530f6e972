package golden

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// ToolCall is one tool call the engine reported, placed after the
// transcript entries that existed when it ended; or a line of the
// runner's own (Plain), placed the same way.
type ToolCall struct {
	After int // len(transcript) when the call ended
	Line  string
	// Plain lines are not a tool's: a restart (RestartLine). They are
	// written flush left.
	Plain bool
}

// RestartLine is the line of a restart: the service stopped, was down
// for down, and started again at up (the simulated clock).
func RestartLine(down time.Duration, up time.Time) string {
	return fmt.Sprintf("~ restart: down %v, up at %s", down, up.UTC().Format("2006-01-02 15:04 MST"))
}

// ToolLine renders a tool call: the tool, its input (redacted, on one
// line, cut at 160 characters) and its outcome with the first line of its
// result. The result of a history read or a recall is what the model read
// of the conversation: its messages follow, one a line ("    | …", each
// cut at 160 characters, at most historyLines), so that a change in what
// the model is shown (an author's role, an escape, what memory finds)
// changes the transcript.
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
	if historyReads[name] && outcome == "ok" {
		first, rest, more := strings.Cut(result, "\n")
		line += ": " + OneLine(first, 100)
		if !more {
			return line
		}
		for i, l := range strings.Split(rest, "\n") {
			if i == historyLines {
				line += "\n    | …"
				break
			}
			line += "\n    | " + OneLine(l, 160)
		}
		return line
	}
	if r := OneLine(result, 100); r != "" {
		line += ": " + r
	}
	return line
}

// historyReads are the tools whose results ToolLine shows whole.
var historyReads = map[string]bool{
	"mcp__agent_chat__get_thread_history":  true,
	"mcp__agent_chat__get_channel_history": true,
	"mcp__agent_memory__recall":            true,
}

// historyLines is how many lines of a history read ToolLine shows.
const historyLines = 12

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
