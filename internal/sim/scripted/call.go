package scripted

import (
	"encoding/json"
	"strings"
)

// callScript is the call behaviour's turn: the person's first word names
// the tool the model calls (a tool server's, `mcp__tracker__whoami`), the
// rest, when given, is its input as a JSON object (else no input); the
// reply is "call: " and the first line of the tool's result, so that a
// scenario sees what the tool answered, or why it did not run.
func callScript(words string) []step {
	tool, rest, _ := strings.Cut(strings.TrimSpace(words), " ")
	if tool == "" {
		return []step{reply(fixed("call: say which tool to call"))}
	}
	var in any = map[string]any{}
	if rest = strings.TrimSpace(rest); rest != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(rest), &obj); err != nil {
			return []step{reply(fixed("call: the input is not a JSON object"))}
		}
		in = obj
	}
	return []step{{tool: tool, input: func(string, []string) any { return in }},
		reply(func(_ string, r []string) string {
			first, _, _ := strings.Cut(r[0], "\n")
			return "call: " + first
		})}
}
