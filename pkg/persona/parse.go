package persona

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// defaultFile names the source in messages when Parse is given no name.
const defaultFile = "SOUL.md"

// MaxSize is the largest SOUL.md Parse accepts. The persona goes into every
// system prompt: a mebibyte of text is some 250,000 tokens, more than a
// model's whole context window, so a larger file cannot be a persona.
const MaxSize = 1 << 20

// ParseError is a problem that stops SOUL.md from loading: an invalid
// redaction regex, approval timeout or permission mode, or a file larger
// than MaxSize. Its message names the file and line (Line is 0 for the
// file as a whole): `SOUL.md:14: invalid redaction regex "([a-z": ...`.
type ParseError struct {
	File string
	Line int
	Msg  string
	Err  error // the underlying error, if any
}

// Error renders the error as "<file>:<line>: <message>".
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// section is a "## Name" heading and the lines under it.
type section struct {
	name string // as written, emphasis removed
	line int
	body []srcLine
}

// parser is the state of one Parse call.
type parser struct {
	p    *Persona
	file string
	// seen maps a section's identity to the line it first appeared on.
	seen map[string]int
	// keys maps "section/key" to the line a single-valued key was set on.
	keys map[string]int
	// pos maps "<list>/<id>" to an entry's index in its list (channel lists,
	// approvers, blocked users), so that merging stays linear.
	pos map[string]int
	// texts collects the parts of texts that duplicates extend ("mandate",
	// "channel/<id>", "extra/<name>", "comment/<user>"); finish joins them,
	// so that merging stays linear.
	texts map[string][]string
}

// Parse reads a SOUL.md source. name is the file's path, used in messages.
// The result is prepared (see Prepare). The error, always a *ParseError, is
// for a file that cannot be used as it is; missing required fields are not
// an error here (see Missing), and doubtful content becomes Warnings.
func Parse(name string, src []byte) (*Persona, error) {
	if name == "" {
		name = defaultFile
	}
	ps := &parser{
		p:     &Persona{File: name, ApprovalTimeoutSeconds: -1},
		file:  name,
		seen:  make(map[string]int),
		keys:  make(map[string]int),
		pos:   make(map[string]int),
		texts: make(map[string][]string),
	}
	if len(src) > MaxSize {
		return nil, &ParseError{File: name, Msg: fmt.Sprintf("file is %d bytes, more than the %d a persona may have", len(src), MaxSize)}
	}
	lines, invalidUTF8, unterminated := splitLines(src)
	if invalidUTF8 {
		ps.warn(0, "the file is not valid UTF-8: invalid bytes were replaced")
	}
	if unterminated > 0 {
		ps.warn(unterminated, "comment <!-- is never closed: the rest of the file is ignored")
	}
	intro, sections := ps.split(lines)
	ps.p.Intro = freeText(intro)
	for _, s := range sections {
		if err := ps.section(s); err != nil {
			return nil, err
		}
	}
	ps.finish(lines)
	if err := ps.p.Prepare(); err != nil {
		return nil, err // unreachable: every pattern compiled above
	}
	return ps.p, nil
}

func (ps *parser) warn(line int, format string, args ...any) {
	ps.p.Warnings = append(ps.p.Warnings, Warning{Line: line, Text: fmt.Sprintf(format, args...)})
}

func (ps *parser) fail(line int, format string, args ...any) error {
	return &ParseError{File: ps.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// split cuts the lines into the title, the intro and the sections.
func (ps *parser) split(lines []srcLine) (intro []srcLine, sections []section) {
	for _, l := range lines {
		level, text, ok := 0, "", false
		if !l.fenced {
			level, text, ok = heading(l.text)
		}
		switch {
		case !ok || level > 2:
			if len(sections) == 0 {
				intro = append(intro, l)
			} else {
				sections[len(sections)-1].body = append(sections[len(sections)-1].body, l)
			}
			continue
		case level == 1 && len(sections) == 0 && ps.p.Title == "":
			ps.p.Title = text
			continue
		case level == 1:
			ps.warn(l.n, "heading %q has one '#': read as a section (sections are \"## Name\")", "# "+text)
		}
		sections = append(sections, section{name: text, line: l.n})
	}
	return intro, sections
}

// Section kinds.
const (
	kindIdentity  = "identity"
	kindReporting = "reporting"
	kindMandate   = "mandate"
	kindTrusted   = "trusted channels"
	kindAllowed   = "allowed channels"
	kindApprovers = "approvers"
	kindRedaction = "redaction"
	kindBlocked   = "blocked"
	kindTimeout   = "approval timeout"
	kindValues    = "values"
	kindPrompts   = "suggested prompts"
	kindBudgets   = "budgets"
	kindChannel   = "channel"
	kindExtra     = ""
	kindPeers     = "peers"
	kindLoading   = "loading messages"
	kindNetwork   = "network"
)

// sectionKinds maps normalised section names, with the spellings tolerated,
// to their kinds.
var sectionKinds = map[string]string{
	"identity":                   kindIdentity,
	"reporting":                  kindReporting,
	"mandate":                    kindMandate,
	"trusted channels":           kindTrusted,
	"trusted channel":            kindTrusted,
	"allowed channels":           kindAllowed,
	"allowed channel":            kindAllowed,
	"approvers":                  kindApprovers,
	"approver":                   kindApprovers,
	"redaction":                  kindRedaction,
	"redactions":                 kindRedaction,
	"blocked":                    kindBlocked,
	"blocked users":              kindBlocked,
	"blocked user":               kindBlocked,
	"approval timeout":           kindTimeout,
	"approval timeout seconds":   kindTimeout,
	"approval timeout (seconds)": kindTimeout,
	"values":                     kindValues,
	"suggested prompts":          kindPrompts,
	"suggested prompt":           kindPrompts,
	"budgets":                    kindBudgets,
	"budget":                     kindBudgets,
	"peers":                      kindPeers,
	"peer":                       kindPeers,
	"loading messages":           kindLoading,
	"loading message":            kindLoading,
	"network":                    kindNetwork,
}

// sectionKind classifies a heading; arg is the channel reference of a
// "## Channel <#C…>" heading.
func sectionKind(name string) (kind, arg string) {
	n := normName(name)
	if k, ok := sectionKinds[n]; ok {
		return k, ""
	}
	// Take the reference from the heading as written: ids are upper case.
	orig := strings.TrimSpace(name)
	if len(orig) >= len("channel") && strings.EqualFold(orig[:len("channel")], "channel") {
		rest := orig[len("channel"):]
		if rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == ':' {
			return kindChannel, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
		}
	}
	return kindExtra, ""
}

// once records a section's identity; a second occurrence is merged with the
// first and warned about.
func (ps *parser) once(id string, s section) {
	if first, dup := ps.seen[id]; dup {
		ps.warn(s.line, "duplicate section %q (first at line %d): merged", "## "+s.name, first)
		return
	}
	ps.seen[id] = s.line
}

func (ps *parser) section(s section) error {
	kind, arg := sectionKind(s.name)
	switch kind {
	case kindChannel:
		return ps.channel(s, arg)
	case kindExtra:
		ps.once("extra:"+normName(s.name), s)
		ps.extra(s)
		return nil
	}
	ps.once(kind, s)
	switch kind {
	case kindIdentity:
		ps.identity(s)
	case kindReporting:
		ps.reporting(s)
	case kindMandate:
		ps.addText(kindMandate, freeText(s.body))
	case kindTrusted:
		ps.p.Trusted = ps.channels(s, kindTrusted, ps.p.Trusted)
	case kindAllowed:
		ps.p.Allowed = ps.channels(s, kindAllowed, ps.p.Allowed)
	case kindApprovers:
		ps.approvers(s)
	case kindRedaction:
		return ps.redaction(s)
	case kindBlocked:
		ps.blocked(s)
	case kindTimeout:
		return ps.timeout(s)
	case kindValues:
		for _, it := range items(s.body, true) {
			if it.text != "" {
				ps.p.Values = append(ps.p.Values, it.text)
			}
		}
	case kindPrompts:
		ps.prompts(s)
	case kindBudgets:
		ps.budgets(s)
	case kindPeers:
		return ps.peers(s)
	case kindLoading:
		ps.loading(s)
	case kindNetwork:
		return ps.network(s)
	}
	return nil
}

// finish applies defaults and the checks that need the whole file.
func (ps *parser) finish(lines []srcLine) {
	p := ps.p
	p.Mandate = ps.text(kindMandate, "\n\n")
	for i := range p.Approvers {
		p.Approvers[i].Comment = ps.text("comment/"+p.Approvers[i].UserID, "; ")
	}
	for id, o := range p.Channels {
		o.Text = ps.text("channel/"+id, "\n\n")
		p.Channels[id] = o
	}
	for i := range p.Extra {
		p.Extra[i].Text = ps.text("extra/"+normName(p.Extra[i].Name), "\n\n")
	}
	if p.ApprovalTimeoutSeconds < 0 {
		p.ApprovalTimeoutSeconds = DefaultApprovalTimeout
	}
	for _, l := range lines {
		if strings.Contains(l.text, Placeholder) {
			ps.warn(l.n, "placeholder %s is still here: fill it in", Placeholder)
		}
	}
	if p.DMOpen() {
		ps.warn(0, "%s", OpenDMs)
	}
	for _, c := range p.Trusted {
		if _, both := ps.pos[kindAllowed+"/"+c.ID]; both {
			ps.warn(0, "channel %s is both trusted and allowed: treated as allowed", c)
		}
	}
	if p.BackupManager.UserID != "" && p.BackupManager.UserID == p.Manager.UserID {
		ps.warn(0, "the backup manager is the manager")
	}
	for _, who := range []Contact{p.Manager, p.BackupManager} {
		if _, blocked := ps.pos[kindBlocked+"/"+who.UserID]; blocked && who.UserID != "" {
			ps.warn(0, "<@%s> is a manager and is blocked: their messages will be dropped", who.UserID)
		}
	}
	for _, id := range sortedKeys(p.Channels) {
		o := p.Channels[id]
		_, allowed := ps.pos[kindAllowed+"/"+id]
		if allowed && (o.Mode == pipeline.ModeBypass || o.Mode == pipeline.ModeAcceptEdits) {
			ps.warn(0, "mode %s of %s is capped at ask: it is an allowed channel", o.Mode, ChannelRef{ID: o.ID, Name: o.Name})
		}
	}
	// Warnings in file order; those about the whole file last.
	slices.SortStableFunc(p.Warnings, func(a, b Warning) int {
		return cmp.Compare(lineOrder(a.Line), lineOrder(b.Line))
	})
}

func lineOrder(n int) int {
	if n == 0 {
		return int(^uint(0) >> 1)
	}
	return n
}
