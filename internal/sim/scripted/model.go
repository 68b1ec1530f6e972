package scripted

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Behaviours are the scripts the model plays, in the order interfaces.md lists them.
var Behaviours = []string{"reply", "echo", "request_approval", "boom", "events", "markdown", "silent", "upload", "edit", "read", "attachments", "context", "events2", "memory", "call"}

// Valid reports whether name is a behaviour.
func Valid(name string) bool {
	for _, b := range Behaviours {
		if b == name {
			return true
		}
	}
	return false
}

// ErrBoom is the failure of the boom behaviour.
var ErrBoom = errors.New("stub model: boom")

// Markdown is what the markdown behaviour replies: a table, a fenced code
// block, a bold word and a link.
const Markdown = "Here is the **status**:\n\n| service | state |\n|---|---|\n| api | up |\n| worker | degraded |\n\n" +
	"```sh\nkubectl rollout status deploy/api\n```\n\nDetails on [the dashboard](https://status.example.com)."

// Model is the scripted model. Behaviour is read on every call, so the REPL's
// /behavior applies to the next turn.
type Model struct {
	behaviour atomic.Value // string
	calls     atomic.Int64

	// recorded are the turns the Recorded behaviour plays (NewRecorded);
	// recTurn counts the turns begun.
	recorded [][]Answer
	recMu    sync.Mutex
	recTurn  int
}

// New returns a scripted model playing a behaviour.
func New(behaviour string) (*Model, error) {
	m := &Model{}
	if err := m.SetBehaviour(behaviour); err != nil {
		return nil, err
	}
	return m, nil
}

// SetBehaviour changes the behaviour.
func (m *Model) SetBehaviour(b string) error {
	if !Valid(b) {
		return fmt.Errorf("unknown agent behaviour %q (want one of %s)", b, strings.Join(Behaviours, ", "))
	}
	m.behaviour.Store(b)
	return nil
}

// Behaviour returns the current behaviour.
func (m *Model) Behaviour() string { return m.behaviour.Load().(string) }

// Model names the model to the engine and in the logs: "stub", as the CLI calls it.
func (m *Model) Model() string { return "stub" }

// Calls is how many requests the model answered.
func (m *Model) Calls() int64 { return m.calls.Load() }

// RunsCommands reports whether a behaviour's turn runs a command (the Bash
// tool), which starts processes through the sandbox.
func RunsCommands(behaviour string) bool {
	for _, s := range script(behaviour) {
		if s.tool == "Bash" {
			return true
		}
	}
	return false
}

// step is one tool call of a behaviour's script; input may use the results
// of the calls before it.
type step struct {
	tool  string
	input func(words string, results []string) any
	// seen, when set, gives the input instead, from the files the person's
	// message showed the model (Seen).
	seen func(files []string) any
}

func reply(f func(words string, results []string) string) step {
	return step{tool: "mcp__agent_chat__reply", input: func(w string, r []string) any { return map[string]string{"text": f(w, r)} }}
}

func fixed(s string) func(string, []string) string { return func(string, []string) string { return s } }

func script(behaviour string) []step {
	switch behaviour {
	case "reply":
		return []step{reply(fixed("ack: done"))}
	case "echo":
		return []step{reply(func(w string, _ []string) string { return "echo: " + w })}
	case "context":
		return []step{reply(func(w string, _ []string) string { return "context: " + w })}
	case "request_approval":
		return []step{
			{tool: "mcp__agent_chat__request_approval", input: func(string, []string) any {
				return map[string]string{"category": "deploy", "summary": "deploy prod"}
			}},
			reply(func(_ string, r []string) string { return r[0] }),
		}
	case "events":
		return []step{
			{tool: "Bash", input: func(string, []string) any { return map[string]string{"command": "echo simulated"} }},
			{tool: "Read", input: func(string, []string) any { return map[string]string{"file_path": "notes.md"} }},
			{tool: "Grep", input: func(string, []string) any { return map[string]string{"pattern": "TODO"} }},
			reply(fixed("ack: events done")),
		}
	case "events2":
		return events2()
	case "markdown":
		return []step{reply(fixed(Markdown))}
	case "upload":
		return []step{
			{tool: "Write", input: func(string, []string) any {
				return map[string]string{"file_path": "sim-report.txt", "content": "simulated report\n"}
			}},
			{tool: "mcp__agent_chat__upload", input: func(string, []string) any {
				return map[string]string{"path": "sim-report.txt", "title": "Simulation report", "comment": "here is the report"}
			}},
		}
	case "attachments":
		return []step{{tool: "mcp__agent_chat__reply", seen: func(files []string) any {
			text := "seen: nothing"
			if len(files) > 0 {
				text = "seen: " + strings.Join(files, "; ")
			}
			return map[string]string{"text": text}
		}}}
	case "edit":
		return []step{
			reply(fixed("draft: working on it")),
			{tool: "mcp__agent_chat__edit", input: func(_ string, r []string) any {
				return map[string]string{"ts": postedTS(r[0]), "text": "final: done"}
			}},
		}
	case "read":
		return []step{
			{tool: "mcp__agent_chat__react", input: func(string, []string) any { return map[string]string{"name": "eyes"} }},
			{tool: "mcp__agent_chat__get_thread_history", input: func(string, []string) any { return map[string]any{} }},
			reply(func(_ string, r []string) string {
				if n := messagesRead(r[1]); n != 1 {
					return fmt.Sprintf("ack: read %d messages", n)
				}
				return "ack: read 1 message"
			}),
			{tool: "mcp__agent_chat__unreact", input: func(string, []string) any { return map[string]string{"name": "eyes"} }},
		}
	}
	return nil // silent
}

// events2 reports a wide set of tool activity on the status line
// (interfaces.md): the file tools the events behaviour leaves out, the chat
// read tools, a tool server's tool and a plain tool name (neither of which
// this persona has: each is refused as unknown, its status shown all the
// same), then a reply.
func events2() []step {
	none := func(string, []string) any { return map[string]any{} }
	in := func(kv ...string) func(string, []string) any {
		return func(string, []string) any {
			m := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
	}
	return []step{
		{tool: "Write", input: in("file_path", "out.txt", "content", "simulated\n")},
		{tool: "Edit", input: in("file_path", "out.txt", "old_string", "simulated", "new_string", "edited")},
		{tool: "Glob", input: in("pattern", "*.txt")},
		{tool: "LS", input: none},
		{tool: "mcp__agent_chat__get_thread_history", input: none},
		{tool: "mcp__agent_chat__get_channel_history", input: none},
		{tool: "mcp__agent_chat__get_user", input: in("user_id", "U0MGR")},
		{tool: "mcp__agent_chat__get_channel_info", input: none},
		{tool: "mcp__agent_chat__list_channel_members", input: none},
		{tool: "mcp__some_server__some_tool", input: none},
		{tool: "plain_tool", input: none},
		reply(fixed("ack: events2 done")),
	}
}

// messagesRead counts the messages of a history read's result: one a
// line, each starting with its ts in brackets.
func messagesRead(result string) int {
	n := 0
	for line := range strings.SplitSeq(result, "\n") {
		if strings.HasPrefix(line, "[") {
			n++
		}
	}
	return n
}

// postedTS finds the ts in the reply tool's result ("posted (ts 1.2)").
func postedTS(result string) string {
	_, rest, ok := strings.Cut(result, "(ts ")
	if !ok {
		return ""
	}
	ts, _, _ := strings.Cut(rest, ")")
	return ts
}

// Send answers one request of the engine's tool loop: the next step of the
// behaviour's script, given the tool results of this turn so far.
func (m *Model) Send(ctx context.Context, p anthropic.MessageNewParams) (msg *anthropic.Message, err error) {
	m.calls.Add(1)
	// The span a model call has, so that a sim run's traces read like the
	// service's.
	_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("stub").Start(ctx, "llm.request",
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("gen_ai.provider.name", "stub"), attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", "stub:"+m.Behaviour())))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		} else if msg != nil {
			span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(msg.StopReason)}))
		}
		span.End()
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	behaviour := m.Behaviour()
	if behaviour == Recorded {
		return m.recordedAnswer(p.Messages), nil
	}
	if behaviour == "boom" {
		return nil, ErrBoom
	}
	words, results := turnState(p.Messages)
	if behaviour == "context" {
		words = threadContext(p.Messages, words)
	}
	steps := script(behaviour)
	if behaviour == "memory" {
		steps = memoryScript(words, carriedMemories(p.Messages))
	}
	if behaviour == "call" {
		steps = callScript(words)
	}
	if len(results) >= len(steps) {
		return &anthropic.Message{Role: "assistant", StopReason: anthropic.StopReasonEndTurn, Model: "stub"}, nil
	}
	s := steps[len(results)]
	var in any
	if s.seen != nil {
		in = s.seen(Seen(p.Messages))
	} else {
		in = s.input(words, results)
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("toolu_stub_%d", m.calls.Load())
	return &anthropic.Message{
		Role:       "assistant",
		Model:      "stub",
		StopReason: anthropic.StopReasonToolUse,
		Content:    []anthropic.ContentBlockUnion{{Type: "tool_use", ID: id, Name: s.tool, Input: input}},
	}, nil
}

// turnState reads the current turn from the conversation: the person's
// words (the last user message written by a person, unwrapped from its
// envelope, escapes kept: the words as the agent received them) and the
// text of every tool result since.
func turnState(msgs []anthropic.MessageParam) (words string, results []string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != anthropic.MessageParamRoleUser {
			continue
		}
		found := false
		var after []string
		for _, b := range msgs[i].Content {
			switch {
			case b.OfText != nil:
				if _, _, w, ok := pipeline.ParseEnvelope(b.OfText.Text); ok {
					words, found, after = w, true, nil
				}
			case b.OfToolResult != nil && found:
				after = append(after, resultText(b.OfToolResult))
			}
		}
		if found {
			// Tool results of this turn are in the user messages after it.
			for _, m := range msgs[i+1:] {
				if m.Role != anthropic.MessageParamRoleUser {
					continue
				}
				for _, b := range m.Content {
					if b.OfToolResult != nil {
						after = append(after, resultText(b.OfToolResult))
					}
				}
			}
			return words, after
		}
	}
	return "", nil
}

func resultText(r *anthropic.ToolResultBlockParam) string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.OfText != nil {
			b.WriteString(c.OfText.Text)
		}
	}
	return b.String()
}

// decoded is m with its fields read: a message the engine passes on as
// its stored JSON (raw overrides) is decoded from it; ok is false when
// that fails.
func decoded(m anthropic.MessageParam) (anthropic.MessageParam, bool) {
	if _, raw := m.Overrides(); !raw {
		return m, true
	}
	b, err := json.Marshal(m)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return m, false
	}
	return m, true
}

// Seen lists the files the request shows the model, oldest first: for each
// image or document block, the label before it (up to its first " (") and
// what the block carries ("attachments/chart.png: image/png, 68 bytes"),
// and for a label followed by a line instead, that line. Messages the
// engine passes on as their stored JSON are read from it.
func Seen(msgs []anthropic.MessageParam) []string {
	var seen []string
	for _, m := range msgs {
		m, ok := decoded(m)
		if !ok || m.Role != anthropic.MessageParamRoleUser {
			continue
		}
		label := ""
		for _, b := range m.Content {
			switch {
			case b.OfText != nil && label != "":
				seen = append(seen, label+": "+b.OfText.Text)
				label = ""
			case b.OfText != nil:
				if rest, ok := strings.CutPrefix(b.OfText.Text, "Attachment "); ok {
					label, _, _ = strings.Cut(rest, " (")
				}
			case b.OfImage != nil && b.OfImage.Source.OfBase64 != nil:
				src := b.OfImage.Source.OfBase64
				seen = append(seen, fmt.Sprintf("%s: %s, %d bytes", label, src.MediaType, decodedLen(src.Data)))
				label = ""
			case b.OfDocument != nil && b.OfDocument.Source.OfBase64 != nil:
				seen = append(seen, fmt.Sprintf("%s: application/pdf, %d bytes", label, decodedLen(b.OfDocument.Source.OfBase64.Data)))
				label = ""
			}
		}
	}
	return seen
}

func decodedLen(b64 string) int {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return -1
	}
	return len(b)
}
