package scripted

import (
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// memoryScript is the memory behaviour's turn, chosen by the person's
// first word: "remember <text>" (or "remember everywhere: <text>", scope
// persona), "recall <query>" and "forget <id>" call that memory tool with
// the rest of the words; the reply is "memory: " and the tool result's
// first line, with the ids of the memories the turn's request carried
// (a thread's first turn: "carried <id>, <id>; ").
func memoryScript(words string, carried []string) []step {
	verb, rest, _ := strings.Cut(strings.TrimSpace(words), " ")
	rest = strings.TrimSpace(rest)
	var call step
	switch strings.ToLower(verb) {
	case "remember":
		in := map[string]string{"text": rest}
		if text, ok := strings.CutPrefix(rest, "everywhere:"); ok {
			in = map[string]string{"text": strings.TrimSpace(text), "scope": "persona"}
		}
		call = step{tool: "mcp__agent_memory__remember", input: func(string, []string) any { return in }}
	case "recall":
		call = step{tool: "mcp__agent_memory__recall", input: func(string, []string) any { return map[string]string{"query": rest} }}
	case "forget":
		call = step{tool: "mcp__agent_memory__forget", input: func(string, []string) any { return map[string]string{"id": rest} }}
	default:
		return []step{reply(fixed("memory: say remember, recall or forget"))}
	}
	prefix := ""
	if len(carried) > 0 {
		prefix = "carried " + strings.Join(carried, ", ") + "; "
	}
	return []step{call, reply(func(_ string, r []string) string {
		first, _, _ := strings.Cut(r[0], "\n")
		return "memory: " + prefix + first
	})}
}

// memoryNote opens the runtime's line of one memory a thread's first turn
// carries before the person's words (memory.Note, written by
// memory.FirstTurnText): "[runtime] memory <id> (<date>…):", then the
// memory's words in their author's envelope, in the next block.
const memoryNote = "[runtime] memory "

// carriedMemories lists the ids of the memories the request's current
// turn carries: the lines of the memories before the person's words in
// the message holding them.
func carriedMemories(msgs []anthropic.MessageParam) []string {
	for i := len(msgs) - 1; i >= 0; i-- {
		m, ok := decoded(msgs[i])
		if !ok || m.Role != anthropic.MessageParamRoleUser {
			continue
		}
		var ids []string
		memory := false // the block is the words of the memory just named
		for _, b := range m.Content {
			if b.OfText == nil {
				continue
			}
			text := b.OfText.Text
			if memory {
				memory = false
				continue
			}
			if _, _, _, ok := pipeline.ParseEnvelope(text); ok {
				return ids
			}
			if rest, ok := strings.CutPrefix(text, memoryNote); ok {
				id, _, _ := strings.Cut(rest, " ")
				ids, memory = append(ids, id), true
			}
		}
	}
	return nil
}
