package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// scenario writes the scenario of turns: the file's keys in the order a
// person reads them, each text redacted.
func scenario(p *persona.Persona, red Redactor, th Thread, turns []turn, notes []string) ([]byte, error) {
	root := mapping()
	add(root, "name", scalar(fmt.Sprintf("recorded thread %s %s", th.Channel, th.ThreadTS)))
	layer := string(p.Layer(th.Channel, strings.HasPrefix(th.Channel, "D")))
	add(root, "layer", scalar(layer))
	add(root, "as", scalar(turns[0].user))
	add(root, "soul", soulOf(p))

	model := &yaml.Node{Kind: yaml.SequenceNode}
	steps := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range turns {
		answers := &yaml.Node{Kind: yaml.SequenceNode}
		var replies []string
		for _, a := range t.answers {
			an := mapping()
			an.Style = yaml.FlowStyle
			if a.Text != "" {
				add(an, "text", scalar(red.Redact(a.Text)))
			}
			if len(a.Tools) > 0 {
				tools := &yaml.Node{Kind: yaml.SequenceNode}
				for _, c := range a.Tools {
					cn := mapping()
					add(cn, "name", scalar(c.Name))
					in, err := inputNode(red, c.Input)
					if err != nil {
						return nil, fmt.Errorf("tool call %s: %w", c.Name, err)
					}
					add(cn, "input", in)
					tools.Content = append(tools.Content, cn)
					if c.Name == replyTool {
						var r struct {
							Text string `json:"text"`
						}
						if json.Unmarshal(c.Input, &r) == nil && r.Text != "" {
							replies = append(replies, red.Redact(r.Text))
						}
					}
				}
				add(an, "tools", tools)
				an.Style = 0
			}
			answers.Content = append(answers.Content, an)
		}
		model.Content = append(model.Content, answers)

		steps.Content = append(steps.Content, step("send", "text", red.Redact(t.words), "as", t.user, "thread", "recorded"))
		for _, c := range t.cards {
			steps.Content = append(steps.Content, step("expect_card", "kind", "approval", "contains", excerpt(red.Redact(c.Summary))))
			if action, ok := clickOf[c.State]; ok {
				steps.Content = append(steps.Content, step("click", "action", action, "as", c.DecidedBy))
			}
		}
		for _, r := range replies {
			if e := excerpt(r); e != "" {
				steps.Content = append(steps.Content, step("expect_reply", "contains", e))
			}
		}
	}
	add(root, "model", model)
	add(root, "steps", steps)

	var b bytes.Buffer
	b.WriteString("# Recorded by `agent sim record " + th.Channel + " " + th.ThreadTS + "`: the people's messages as sends,\n")
	b.WriteString("# the persona's model answers as the scripted model's (model:), its replies as expectations.\n")
	for _, n := range notes {
		b.WriteString("# Note: " + n + "\n")
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// clickOf is the click that decided a card, by the card's state.
var clickOf = map[string]string{store.ApprovalApproved: pipeline.ActionApprove, store.ApprovalDenied: pipeline.ActionDeny,
	store.ApprovalAlways: pipeline.ActionAlways}

// soulOf is the scenario's soul: the persona's people by their ids (the
// channels stay the simulator's, by layer).
func soulOf(p *persona.Persona) *yaml.Node {
	s := mapping()
	add(s, "manager", scalar(p.Manager.UserID))
	add(s, "backup", scalar(p.BackupManager.UserID))
	approvers := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, a := range p.Approvers {
		approvers.Content = append(approvers.Content, scalar(a.UserID+" : "+strings.Join(a.Scopes, ", ")))
	}
	add(s, "approvers", approvers)
	blocked := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, u := range p.Blocked {
		blocked.Content = append(blocked.Content, scalar(u))
	}
	add(s, "blocked", blocked)
	return s
}

// inputNode is a tool call's JSON input as YAML, its strings redacted.
func inputNode(red Redactor, raw json.RawMessage) (*yaml.Node, error) {
	var v any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
	}
	if v == nil {
		v = map[string]any{}
	}
	var n yaml.Node
	if err := n.Encode(redactAll(red, v)); err != nil {
		return nil, err
	}
	n.Style = yaml.FlowStyle
	return &n, nil
}

// redactAll redacts every string of a decoded JSON value, keys included.
func redactAll(red Redactor, v any) any {
	switch x := v.(type) {
	case string:
		return red.Redact(x)
	case []any:
		for i := range x {
			x[i] = redactAll(red, x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[red.Redact(k)] = redactAll(red, e)
		}
		return out
	}
	return v
}

// maxExcerpt is the longest text an expectation quotes.
const maxExcerpt = 60

// excerpt is what an expectation looks for in a post of text: its first
// run of plain words (markup is converted on the way to the chat, so its
// characters are cut at), at most maxExcerpt bytes on a rune boundary;
// "" when the text has none.
func excerpt(text string) string {
	best := ""
	for _, part := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune("*_~`[]()<>|#&\n\r\t", r) }) {
		part = strings.TrimSpace(part)
		if utf8.RuneCountInString(part) > utf8.RuneCountInString(best) {
			best = part
		}
		if len(best) >= 8 {
			break
		}
	}
	if len(best) > maxExcerpt {
		cut := maxExcerpt
		for cut > 0 && !utf8.RuneStart(best[cut]) {
			cut--
		}
		best = strings.TrimSpace(best[:cut])
	}
	return best
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func scalar(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, scalar(key), v)
}

// step is a one-key mapping {kind: {k: v, …}}, its fields in flow style.
func step(kind string, kv ...string) *yaml.Node {
	f := mapping()
	f.Style = yaml.FlowStyle
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			add(f, kv[i], scalar(kv[i+1]))
		}
	}
	s := mapping()
	add(s, kind, f)
	return s
}
