package sim

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/persona-runtime/agent/pkg/persona"
)

// The ids of the sim world (interfaces.md "Simulation scenarios").
const (
	Manager  = "U0MGR"
	Backup   = "U0BACKUP"
	Approver = "U0APP" // scope anything
	Member   = "U0ALICE"
	Outsider = "U0BOB"

	TrustedChannel    = "C0TEAM"
	AllowedChannel    = "C0PUB"
	RestrictedChannel = "C0RANDOM" // on no list
	DMChannel         = "D0SIM"
)

// World is the persona a scenario runs against, before it is rendered as
// SOUL.md. User and channel entries are ids, bare (U0MGR, C0TEAM) or as
// the platform writes them (<@U0MGR>, <#C0TEAM|team>).
type World struct {
	Name      string
	Manager   string
	Backup    string   // "" for none
	Approvers []string // "U0APP: anything", "U0X: Bash, Write ; comment"
	Trusted   []string
	Allowed   []string
	Blocked   []string
	Redaction []string // "regex ; description"
	Mandate   string
	Peers     []string // other personas' user ids (## Peers)
}

// DefaultWorld is the sim world of interfaces.md.
func DefaultWorld() World {
	return World{
		Name:      "Simbot",
		Manager:   Manager,
		Backup:    Backup,
		Approvers: []string{Approver + ": anything"},
		Trusted:   []string{TrustedChannel},
		Allowed:   []string{AllowedChannel},
		Mandate:   "- Helps the team in the simulator: answers questions.\n- Asks before deploys.",
	}
}

// Merge applies a scenario's soul keys, key by key: each key given replaces
// the world's value (an empty list empties it). A nil o changes nothing.
func (w World) Merge(o *SoulOverride) World {
	if o == nil {
		return w
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	setList := func(dst *[]string, v *[]string) {
		if v != nil {
			*dst = append([]string(nil), *v...)
		}
	}
	set(&w.Manager, o.Manager)
	set(&w.Backup, o.Backup)
	set(&w.Mandate, o.Mandate)
	setList(&w.Approvers, o.Approvers)
	setList(&w.Trusted, o.Trusted)
	setList(&w.Allowed, o.Allowed)
	setList(&w.Blocked, o.Blocked)
	setList(&w.Redaction, o.Redaction)
	setList(&w.Peers, o.Peers)
	return w
}

// SoulMD renders the world as a SOUL.md, for the real parser
// (persona.Parse) to read like any operator's file.
func (w World) SoulMD() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Persona\n\n## Identity\n- Name: %s\n- Role: simulated teammate\n- Voice: brief\n", w.Name)
	fmt.Fprintf(&b, "\n## Reporting\n- Manager: %s\n", userRef(w.Manager))
	if strings.TrimSpace(w.Backup) != "" {
		fmt.Fprintf(&b, "- Backup manager: %s\n", userRef(w.Backup))
	}
	fmt.Fprintf(&b, "\n## Mandate\n%s\n", strings.TrimSpace(w.Mandate))
	list := func(title string, items []string, format func(string) string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n", title)
		for _, it := range items {
			fmt.Fprintf(&b, "- %s\n", format(strings.TrimSpace(it)))
		}
	}
	list("Trusted channels", w.Trusted, channelRef)
	list("Allowed channels", w.Allowed, channelRef)
	list("Approvers", w.Approvers, approverLine)
	list("Blocked", w.Blocked, userRef)
	list("Redaction", w.Redaction, func(r string) string { return r })
	list("Peers", w.Peers, userRef)
	return []byte(b.String())
}

// Persona renders the world and reads it with the real parser. It fails
// when the result lacks a required field or the parser had to ignore or
// doubt a line (a warning): the world would not be what it says.
func (w World) Persona() (*persona.Persona, error) {
	p, err := persona.Parse("SOUL.md (sim world)", w.SoulMD())
	if err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("sim world: %w", err)
	}
	if w := lineWarnings(p); len(w) > 0 {
		return nil, fmt.Errorf("%s:%d: %s", p.File, w[0].Line, w[0].Text)
	}
	return p, nil
}

// lineWarnings are the parser's warnings about a line. Those about the
// file as a whole are left out: "anyone in the workspace can DM" is what
// a scenario emptying both lists means.
func lineWarnings(p *persona.Persona) []persona.Warning {
	var out []persona.Warning
	for _, w := range p.Warnings {
		if w.Line > 0 {
			out = append(out, w)
		}
	}
	return out
}

// RoleUser is the user id that plays role in this world: the manager and
// backup manager it names, its first approver; member and outsider are
// U0ALICE and U0BOB. A user id is itself. ok is false for anything else,
// and for a role the world has nobody for.
func (w World) RoleUser(role string) (string, bool) {
	switch role {
	case "manager":
		id := bareUser(w.Manager)
		return id, id != ""
	case "backup":
		id := bareUser(w.Backup)
		return id, id != ""
	case "approver":
		if len(w.Approvers) == 0 {
			return "", false
		}
		who, _, _ := strings.Cut(w.Approvers[0], ":")
		id := bareUser(who)
		return id, id != ""
	}
	return RoleUser(role)
}

// RoleUser is the user id of a role of the sim world of interfaces.md
// (manager U0MGR, backup U0BACKUP, approver U0APP, member U0ALICE,
// outsider U0BOB); a user id (U… or W…) is itself. ok is false for
// anything else.
func RoleUser(role string) (string, bool) {
	switch role {
	case "manager":
		return Manager, true
	case "backup":
		return Backup, true
	case "approver":
		return Approver, true
	case "member":
		return Member, true
	case "outsider":
		return Outsider, true
	}
	if isID(role, "UW") {
		return role, true
	}
	return "", false
}

// LayerChannel is the sim world's conversation of a trust layer: C0TEAM
// (trusted), C0PUB (allowed), C0RANDOM (restricted), D0SIM (dm); "" for an
// unknown layer.
func LayerChannel(layer string) string {
	switch layer {
	case "trusted":
		return TrustedChannel
	case "allowed":
		return AllowedChannel
	case "restricted":
		return RestrictedChannel
	case "dm":
		return DMChannel
	}
	return ""
}

// isID reports whether s has the shape of a platform id: one of the
// leading letters in first, then upper-case letters and digits.
func isID(s, first string) bool {
	if len(s) < 2 || !strings.ContainsRune(first, rune(s[0])) {
		return false
	}
	for _, c := range s[1:] {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// bareUser is the id in "U0X", "<@U0X>" or "<@U0X|name>"; "" when there
// is none.
func bareUser(s string) string {
	s = strings.TrimSpace(s)
	if inner, ok := strings.CutPrefix(s, "<@"); ok {
		s, _ = strings.CutSuffix(inner, ">")
		s, _, _ = strings.Cut(s, "|")
	}
	if !isID(s, "UW") {
		return ""
	}
	return s
}

func userRef(s string) string {
	if id := bareUser(s); id != "" {
		return "<@" + id + ">"
	}
	return strings.TrimSpace(s)
}

func channelRef(s string) string {
	if isID(s, "CG") {
		return "<#" + s + ">"
	}
	return s
}

// approverLine renders "U0X : scope, scope ; comment" as SOUL.md writes it.
// An approver given without scopes ("U0X", "<@U0X> ; on call") has scope
// anything (interfaces.md): the original runtime's souls list approvers so.
func approverLine(s string) string {
	if !strings.Contains(s, ":") {
		body, comment, commented := strings.Cut(s, ";")
		if id := bareUser(body); id != "" {
			line := userRef(id) + ": " + persona.ScopeAnything
			if commented {
				line += " ; " + strings.TrimSpace(comment)
			}
			return line
		}
	}
	who, rest, ok := strings.Cut(s, ":")
	if !ok || strings.HasPrefix(s, "<@") && !strings.Contains(who, ">") {
		return s
	}
	return userRef(who) + ": " + strings.TrimSpace(rest)
}

// soul reads a scenario's soul mapping. Each value is checked as the
// SOUL.md parser will read it, so that a mistake is reported at its line
// in the scenario rather than as a warning about a generated file.
func (p *parser) soul(n *yaml.Node) (*SoulOverride, error) {
	const where = " in soul"
	o := &SoulOverride{}
	err := p.mapping(n, where, "soul", func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "manager":
			o.Manager, err = p.soulUser(k, v, false)
		case "backup":
			o.Backup, err = p.soulUser(k, v, true)
		case "mandate":
			o.Mandate, err = p.soulMandate(k, v)
		case "approvers":
			o.Approvers, err = p.soulList(k, v, "Approvers", func(q *persona.Persona) int { return len(q.Approvers) })
		case "trusted":
			o.Trusted, err = p.soulList(k, v, "Trusted channels", func(q *persona.Persona) int { return len(q.Trusted) })
		case "allowed":
			o.Allowed, err = p.soulList(k, v, "Allowed channels", func(q *persona.Persona) int { return len(q.Allowed) })
		case "blocked":
			o.Blocked, err = p.soulList(k, v, "Blocked", func(q *persona.Persona) int { return len(q.Blocked) })
		case "redaction":
			o.Redaction, err = p.soulList(k, v, "Redaction", func(q *persona.Persona) int { return len(q.Redactions) })
		case "peers":
			o.Peers, err = p.soulList(k, v, "Peers", func(q *persona.Persona) int { return len(q.Peers) })
		default:
			return p.fail(k, "unknown key %q%s (want manager, backup, approvers, trusted, allowed, blocked, redaction, mandate or peers)", k.Value, where)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := DefaultWorld().Merge(o).Persona(); err != nil {
		return nil, p.fail(n, "soul: the sim world does not read back as written: %v", err)
	}
	return o, nil
}

func (p *parser) soulUser(k, v *yaml.Node, optional bool) (*string, error) {
	s, err := p.str(k, v, " in soul")
	if err != nil {
		return nil, err
	}
	s = strings.TrimSpace(s)
	if s == "" && optional {
		return &s, nil
	}
	if bareUser(s) == "" {
		return nil, p.fail(v, "%s in soul: %q is not a user id (U…)", k.Value, s)
	}
	return &s, nil
}

func (p *parser) soulMandate(k, v *yaml.Node) (*string, error) {
	s, err := p.str(k, v, " in soul")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(s) == "" {
		return nil, p.fail(v, "mandate in soul is empty (SOUL.md requires one)")
	}
	for line := range strings.Lines(s) {
		// A heading would end the Mandate section: "#" then "#", a blank or nothing.
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") && (len(t) == 1 || strings.ContainsRune("# \t", rune(t[1]))) {
			return nil, p.fail(v, "mandate in soul must be plain text or bullets, without headings (%q)", t)
		}
	}
	return &s, nil
}

// soulList reads a list of one-line strings, each of which must make one
// entry (count) of section when SOUL.md is parsed, without a warning.
func (p *parser) soulList(k, v *yaml.Node, section string, count func(*persona.Persona) int) (*[]string, error) {
	out := []string{}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return &out, nil
	}
	if v.Kind != yaml.SequenceNode {
		return nil, p.fail(v, "%s in soul must be a list of strings", k.Value)
	}
	var format func(string) string
	switch section {
	case "Trusted channels", "Allowed channels":
		format = channelRef
	case "Approvers":
		format = approverLine
	case "Blocked", "Peers":
		format = userRef
	default:
		format = func(s string) string { return s }
	}
	for _, item := range v.Content {
		item = resolve(item)
		var s string
		if pair := item.Content; item.Kind == yaml.MappingNode && len(pair) == 2 && section == "Approvers" &&
			resolve(pair[0]).Kind == yaml.ScalarNode && resolve(pair[1]).Kind == yaml.ScalarNode {
			// "- U0X: Bash, Write" unquoted is a YAML mapping: take it as the line it looks like.
			s = resolve(pair[0]).Value + ": " + resolve(pair[1]).Value
		} else {
			var err error
			if s, err = p.str(k, item, " in soul"); err != nil {
				return nil, err
			}
		}
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, "\r\n") {
			return nil, p.fail(item, "%s in soul: %q: want one non-empty line", k.Value, s)
		}
		q, err := persona.Parse("", []byte("## "+section+"\n- "+format(s)+"\n"))
		if err != nil {
			var pe *persona.ParseError
			if errors.As(err, &pe) {
				err = errors.New(pe.Msg)
			}
			return nil, p.fail(item, "%s in soul: %v", k.Value, err)
		}
		if w := lineWarnings(q); len(w) > 0 {
			return nil, p.fail(item, "%s in soul: %s", k.Value, w[0].Text)
		}
		if count(q) != 1 {
			return nil, p.fail(item, "%s in soul: %q is not a %s entry", k.Value, s, strings.ToLower(section))
		}
		out = append(out, s)
	}
	return &out, nil
}
