package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scenario is one transcript file.
type Scenario struct {
	File          string
	Name          string
	Layer         string // trusted, allowed, restricted, dm (default dm)
	As            string // a role or a user id (default manager)
	AgentBehavior string // default reply
	Soul          *SoulOverride
	Steps         []Step
}

// SoulOverride are the sim world keys a scenario replaces.
type SoulOverride struct {
	Manager   *string
	Backup    *string
	Approvers *[]string
	Trusted   *[]string
	Allowed   *[]string
	Blocked   *[]string
	Redaction *[]string
	Mandate   *string
}

// Step is one step of a scenario.
type Step struct {
	Line int
	Kind string // send, expect_reply, expect_card, expect_pending, expect_drop, click

	Text, As, Channel, Thread string
	DM                        bool
	Contains                  string
	CardKind                  string // expect_card's kind
	Reason                    string // expect_drop
	Action                    string // click
}

var (
	layers     = map[string]bool{"trusted": true, "allowed": true, "restricted": true, "dm": true}
	behaviours = map[string]bool{"reply": true, "echo": true, "request_approval": true, "boom": true, "events": true,
		"markdown": true, "silent": true, "upload": true, "edit": true}
	actions = map[string]bool{"approve": true, "deny": true, "always": true}
	// stepKeys are the fields each step kind takes.
	stepKeys = map[string][]string{
		"send":           {"text", "as", "channel", "thread", "dm"},
		"expect_reply":   {"contains"},
		"expect_card":    {"kind", "contains"},
		"expect_pending": {},
		"expect_drop":    {"reason"},
		"click":          {"action", "as"},
	}
)

type parseError struct {
	file string
	line int
	msg  string
}

func (e *parseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg) }

// ParseScenario reads a scenario. Unknown keys anywhere are errors naming
// the file and line.
func ParseScenario(file string, data []byte) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	fail := func(n *yaml.Node, format string, args ...any) error {
		return &parseError{file: file, line: n.Line, msg: fmt.Sprintf(format, args...)}
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty scenario", file)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fail(root, "a scenario is a mapping of keys")
	}
	sc := &Scenario{File: file, Layer: "dm", As: "manager", AgentBehavior: "reply"}
	sawSteps := false
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "name":
			sc.Name = v.Value
		case "layer":
			if !layers[v.Value] {
				return nil, fail(v, "unknown layer %q (want trusted, allowed, restricted or dm)", v.Value)
			}
			sc.Layer = v.Value
		case "as":
			if _, ok := RoleUser(v.Value); !ok {
				return nil, fail(v, "unknown actor %q (want a role: manager, backup, approver, member, outsider, or a user id)", v.Value)
			}
			sc.As = v.Value
		case "agent_behavior":
			if !behaviours[v.Value] {
				return nil, fail(v, "unknown agent_behavior %q", v.Value)
			}
			sc.AgentBehavior = v.Value
		case "soul":
			o, err := parseSoul(v, fail)
			if err != nil {
				return nil, err
			}
			sc.Soul = o
		case "steps":
			sawSteps = true
			if v.Kind != yaml.SequenceNode {
				return nil, fail(v, "steps is a list")
			}
			for n, sn := range v.Content {
				st, err := parseStep(sn, n+1, fail)
				if err != nil {
					return nil, err
				}
				sc.Steps = append(sc.Steps, st)
			}
		default:
			return nil, fail(k, "unknown key %q", k.Value)
		}
	}
	if !sawSteps {
		return nil, fmt.Errorf("%s: no steps", file)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	return sc, nil
}

func parseSoul(v *yaml.Node, fail func(*yaml.Node, string, ...any) error) (*SoulOverride, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fail(v, "soul is a mapping")
	}
	o := &SoulOverride{}
	for i := 0; i < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		str := func() (*string, error) {
			if val.Kind != yaml.ScalarNode {
				return nil, fail(val, "soul.%s is a string", k.Value)
			}
			s := val.Value
			return &s, nil
		}
		list := func() (*[]string, error) {
			var out []string
			if err := val.Decode(&out); err != nil {
				return nil, fail(val, "soul.%s is a list of strings", k.Value)
			}
			if out == nil {
				out = []string{}
			}
			return &out, nil
		}
		var err error
		switch k.Value {
		case "manager":
			o.Manager, err = str()
		case "backup":
			o.Backup, err = str()
		case "mandate":
			o.Mandate, err = str()
		case "approvers":
			o.Approvers, err = list()
		case "trusted":
			o.Trusted, err = list()
		case "allowed":
			o.Allowed, err = list()
		case "blocked":
			o.Blocked, err = list()
		case "redaction":
			o.Redaction, err = list()
		default:
			return nil, fail(k, "unknown key %q in soul", k.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

func parseStep(n *yaml.Node, index int, fail func(*yaml.Node, string, ...any) error) (Step, error) {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return Step{}, fail(n, "step %d is not a single-key mapping (like `send: {text: hi}`)", index)
	}
	k, v := n.Content[0], n.Content[1]
	allowed, ok := stepKeys[k.Value]
	if !ok {
		return Step{}, fail(k, "unknown step %q in step %d", k.Value, index)
	}
	st := Step{Line: k.Line, Kind: k.Value}
	if v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == "") {
		v = &yaml.Node{Kind: yaml.MappingNode, Line: v.Line}
	}
	if v.Kind != yaml.MappingNode {
		return Step{}, fail(v, "step %d (%s) takes a mapping", index, k.Value)
	}
	for i := 0; i < len(v.Content); i += 2 {
		fk, fv := v.Content[i], v.Content[i+1]
		known := false
		for _, a := range allowed {
			known = known || a == fk.Value
		}
		if !known {
			return Step{}, fail(fk, "unknown key %q in step %d (%s)", fk.Value, index, k.Value)
		}
		switch fk.Value {
		case "text":
			st.Text = fv.Value
		case "as":
			if _, ok := RoleUser(fv.Value); !ok {
				return Step{}, fail(fv, "unknown actor %q in step %d", fv.Value, index)
			}
			st.As = fv.Value
		case "channel":
			st.Channel = fv.Value
		case "thread":
			st.Thread = fv.Value
		case "dm":
			if err := fv.Decode(&st.DM); err != nil {
				return Step{}, fail(fv, "dm is true or false in step %d", index)
			}
		case "contains":
			st.Contains = fv.Value
		case "kind":
			st.CardKind = fv.Value
		case "reason":
			st.Reason = fv.Value
		case "action":
			if !actions[fv.Value] {
				return Step{}, fail(fv, "unknown action %q in step %d (want approve, deny or always)", fv.Value, index)
			}
			st.Action = fv.Value
		}
	}
	switch {
	case st.Kind == "send" && st.Text == "":
		return Step{}, fail(k, "step %d (send) needs text", index)
	case st.Kind == "expect_reply" && st.Contains == "":
		return Step{}, fail(k, "step %d (expect_reply) needs contains", index)
	case st.Kind == "expect_drop" && st.Reason == "":
		return Step{}, fail(k, "step %d (expect_drop) needs reason", index)
	case st.Kind == "click" && st.Action == "":
		return Step{}, fail(k, "step %d (click) needs action", index)
	case st.Kind == "expect_card" && st.CardKind == "":
		st.CardKind = "approval"
	}
	return st, nil
}

// Discover lists the scenario files: the args (files or globs) or, with no
// args, every *.yaml under dir; sorted and unique. A pattern that matches
// nothing adds nothing.
func Discover(dir string, args []string) ([]string, error) {
	var patterns []string
	if len(args) == 0 {
		patterns = []string{filepath.Join(dir, "*.yaml")}
	} else {
		patterns = args
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range patterns {
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("bad pattern %q: %w", p, err)
		}
		if matches == nil {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				matches = []string{p}
			}
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && !st.IsDir() && !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
