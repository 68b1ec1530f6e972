package soulx

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/persona-runtime/agent/pkg/persona"
)

// answer is the model's JSON object, as systemPrompt describes it. Keys it
// does not name are ignored.
type answer struct {
	Identity struct {
		Name  string `json:"name"`
		Role  string `json:"role"`
		Voice string `json:"voice"`
	} `json:"identity"`
	Manager       contact    `json:"manager"`
	BackupManager contact    `json:"backupManager"`
	Mandate       string     `json:"mandate"`
	Trusted       []channel  `json:"trustedChannels"`
	Allowed       []channel  `json:"allowedChannels"`
	Approvers     []approver `json:"approvers"`
	Blocked       []string   `json:"blocked"`
	Values        []string   `json:"values"`
}

type contact struct {
	UserID string `json:"userId"`
}

// UnmarshalJSON also takes a bare id ("manager": "U…"), a slip that leaves
// no doubt about what was meant.
func (c *contact) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &c.UserID)
	}
	type plain contact
	return json.Unmarshal(data, (*plain)(c))
}

type channel struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type approver struct {
	UserID string   `json:"userId"`
	Scopes []string `json:"scopes"`
}

// found is an answer that passed check, in the persona's types. Empty means
// the model gave nothing for the field.
type found struct {
	name, role, voice string
	manager, backup   string
	mandate           string
	trusted, allowed  []persona.ChannelRef
	approvers         []persona.Approver
	blocked           []string
	values            []string
}

// checker collects the first problem of an answer.
type checker struct {
	known map[string]bool // the words of the file's text
	err   error
}

func (c *checker) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: %s", ErrInvalidAnswer, fmt.Sprintf(format, args...))
	}
}

// check normalises the answer and checks it against known, the words of the
// file's text. Every id must have its shape and be one of those words,
// whether or not its field is used: a model that invents one is not to be
// trusted with the others.
func (a *answer) check(known map[string]bool) (*found, error) {
	c := &checker{known: known}
	f := &found{
		name:    c.text("identity.name", a.Identity.Name, true),
		role:    c.text("identity.role", a.Identity.Role, true),
		voice:   c.text("identity.voice", a.Identity.Voice, true),
		manager: c.id("manager.userId", a.Manager.UserID, userKind),
		backup:  c.id("backupManager.userId", a.BackupManager.UserID, userKind),
		mandate: c.text("mandate", a.Mandate, false),
		trusted: c.channels("trustedChannels", a.Trusted),
		allowed: c.channels("allowedChannels", a.Allowed),
	}
	seen := make(map[string]int) // approver id -> index in f.approvers
	for i, ap := range a.Approvers {
		field := fmt.Sprintf("approvers[%d]", i)
		id := c.id(field+".userId", ap.UserID, userKind)
		if id == "" {
			c.fail("%s has no userId", field)
			continue
		}
		scopes := c.scopes(field, id, ap.Scopes)
		if j, dup := seen[id]; dup {
			f.approvers[j].Scopes = merge(f.approvers[j].Scopes, scopes)
			continue
		}
		seen[id] = len(f.approvers)
		f.approvers = append(f.approvers, persona.Approver{UserID: id, Scopes: scopes})
	}
	for i, u := range a.Blocked {
		if id := c.id(fmt.Sprintf("blocked[%d]", i), u, userKind); id != "" {
			f.blocked = merge(f.blocked, []string{id})
		}
	}
	for i, v := range a.Values {
		if v = c.text(fmt.Sprintf("values[%d]", i), v, true); v != "" {
			f.values = append(f.values, v)
		}
	}
	return f, c.err
}

// idKind is a kind of id: its shape, and what it is called in errors.
type idKind struct {
	shape func(string) bool
	what  string
}

var (
	userKind    = idKind{isUserID, "user id (U… or W…)"}
	channelKind = idKind{isChannelID, "channel id (C… or G…)"}
)

// id normalises an id ("<@U1>", "@U1" and "<#C1|name>" are tolerated) and
// checks its shape and that the file's text has it. Empty stays empty.
func (c *checker) id(field, raw string, k idKind) string {
	s := strings.TrimSpace(raw)
	s = strings.TrimPrefix(s, "<")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "@"), "#")
	s, _, _ = strings.Cut(s, "|")
	s = strings.TrimSpace(strings.TrimSuffix(s, ">"))
	switch {
	case s == "":
		return ""
	case !k.shape(s):
		c.fail("%s %q is not a %s", field, raw, k.what)
		return ""
	case !c.known[s]:
		c.fail("%s %q does not appear in the file's text: ids must come from SOUL.md, never from the model", field, s)
		return ""
	}
	return s
}

// mention matches a user or channel mention in free text.
var mention = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<[@#]([A-Za-z0-9]+)`) })

// text normalises a text value (trimmed; on one line when oneLine) and
// checks the mentions in it. A value holding the placeholder is no value.
func (c *checker) text(field, s string, oneLine bool) string {
	s = strings.TrimSpace(s)
	if oneLine {
		s = strings.Join(strings.Fields(s), " ")
	}
	if strings.Contains(s, persona.Placeholder) {
		return ""
	}
	for _, m := range mention().FindAllStringSubmatch(s, -1) {
		if !c.known[m[1]] {
			c.fail("%s mentions %q, which does not appear in the file's text", field, m[1])
		}
	}
	return s
}

// channels checks a channel list. An entry without an id is dropped, and so
// is a name that cannot be a channel's (it is only informational).
func (c *checker) channels(field string, in []channel) []persona.ChannelRef {
	var out []persona.ChannelRef
	seen := make(map[string]bool)
	for i, ch := range in {
		id := c.id(fmt.Sprintf("%s[%d].id", field, i), ch.ID, channelKind)
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, persona.ChannelRef{ID: id, Name: channelName(ch.Name)})
	}
	return out
}

// channelName returns name without a leading '#', or "" when it cannot be
// a channel's: the chat platform allows at most 80 characters and no spaces,
// and '<', '>', '|' and '&' would break the "<#C…|name>" reference.
func channelName(name string) string {
	name = strings.TrimPrefix(strings.TrimSpace(name), "#")
	if name == "" || utf8.RuneCountInString(name) > 80 || strings.ContainsAny(name, " \t\n<>|&") {
		return ""
	}
	return name
}

// scopes checks an approver's scopes with the parser's rule; "anything" is
// the catch-all in any case.
func (c *checker) scopes(field, id string, in []string) []string {
	var out []string
	for _, s := range in {
		s = strings.TrimSpace(s)
		if strings.EqualFold(s, persona.ScopeAnything) {
			s = persona.ScopeAnything
		}
		if !scopeRE().MatchString(s) {
			c.fail("%s (%s): scope %q is not a tool name or category", field, id, s)
			continue
		}
		out = merge(out, []string{s})
	}
	if len(out) == 0 && len(in) == 0 {
		c.fail("%s (%s) has no scopes", field, id)
	}
	return out
}

// merge appends the elements of add that list lacks.
func merge(list, add []string) []string {
	for _, s := range add {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// fill sets the fields p lacks to what f has, and returns a note for each.
// A field p has is left as it is, whatever f says.
func (f *found) fill(p *persona.Persona) []string {
	var notes []string
	note := func(field, format string, args ...any) {
		notes = append(notes, field+" filled by the model: "+fmt.Sprintf(format, args...))
	}
	setText := func(field string, dst *string, v string) {
		if unset(*dst) && v != "" {
			*dst = v
			note(field, "%q", v)
		}
	}
	setText("identity.name", &p.Identity.Name, f.name)
	setText("identity.role", &p.Identity.Role, f.role)
	setText("identity.voice", &p.Identity.Voice, f.voice)
	if !isUserID(p.Manager.UserID) && f.manager != "" {
		p.Manager.UserID = f.manager
		note("manager.userId", "%s", f.manager)
	}
	if !isUserID(p.BackupManager.UserID) && f.backup != "" {
		p.BackupManager.UserID = f.backup
		note("backupManager.userId", "%s", f.backup)
	}
	if unset(p.Mandate) && f.mandate != "" {
		p.Mandate = f.mandate
		note("mandate", "%d characters", len(f.mandate))
	}
	if len(p.Trusted) == 0 && len(f.trusted) > 0 {
		p.Trusted = f.trusted
		note("trustedChannels", "%s", refs(f.trusted))
	}
	if len(p.Allowed) == 0 && len(f.allowed) > 0 {
		p.Allowed = f.allowed
		note("allowedChannels", "%s", refs(f.allowed))
	}
	if len(p.Approvers) == 0 && len(f.approvers) > 0 {
		p.Approvers = f.approvers
		var s []string
		for _, a := range f.approvers {
			s = append(s, "<@"+a.UserID+">: "+strings.Join(a.Scopes, ", "))
		}
		note("approvers", "%s", strings.Join(s, "; "))
	}
	if len(p.Blocked) == 0 && len(f.blocked) > 0 {
		p.Blocked = f.blocked
		note("blocked", "%s", strings.Join(f.blocked, ", "))
	}
	if len(p.Values) == 0 && len(f.values) > 0 {
		p.Values = f.values
		note("values", "%d items", len(f.values))
	}
	return notes
}

func refs(cs []persona.ChannelRef) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	return strings.Join(s, ", ")
}
