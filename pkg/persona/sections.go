package persona

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The readers of the known sections. Each reads one "## Section" into the
// Persona being built; merging a duplicate section is the same as reading
// it again, since lists append and texts are collected.

// addText adds a part to the text collected under key.
func (ps *parser) addText(key, text string) {
	if text != "" {
		ps.texts[key] = append(ps.texts[key], text)
	}
}

// text joins the parts collected under key with sep.
func (ps *parser) text(key, sep string) string {
	return strings.Join(ps.texts[key], sep)
}

// set assigns a single-valued key, warning when it was already set.
func (ps *parser) set(dst *string, sect, key string, line int, v string) {
	id := sect + "/" + normKey(key)
	if first, dup := ps.keys[id]; dup {
		ps.warn(line, "%q is given twice (first at line %d): using this one", key, first)
	}
	ps.keys[id] = line
	*dst = v
}

func (ps *parser) identity(s section) {
	id := &ps.p.Identity
	for _, it := range items(s.body, true) {
		k, v, ok := splitKV(it.text)
		if !ok {
			id.Extra = append(id.Extra, it.text)
			continue
		}
		switch normKey(k) {
		case "name":
			ps.set(&id.Name, kindIdentity, k, it.line, unemphasize(v))
		case "role":
			ps.set(&id.Role, kindIdentity, k, it.line, unemphasize(v))
		case "voice":
			ps.set(&id.Voice, kindIdentity, k, it.line, unemphasize(v))
		default:
			id.Extra = append(id.Extra, k+": "+v)
		}
	}
}

func (ps *parser) reporting(s section) {
	p := ps.p
	for _, it := range items(s.body, false) {
		k, v, ok := splitKV(it.text)
		if !ok {
			if it.bullet {
				ps.warn(it.line, "line in \"## Reporting\" ignored: want \"- Manager: U…\"")
			}
			continue
		}
		switch normKey(k) {
		case "manager", "managerid", "manageruserid":
			ps.manager(it.line, v)
		case "managerhandle", "handle":
			ps.set(&p.Manager.Handle, kindReporting, k, it.line, strings.TrimPrefix(v, "@"))
		case "backupmanager", "backup", "backupmanagerid", "backupmanageruserid":
			ps.backup(it.line, v)
		case "backupmanagerhandle", "backuphandle":
			ps.set(&p.BackupManager.Handle, kindReporting, k, it.line, strings.TrimPrefix(v, "@"))
		default:
			ps.warn(it.line, "unknown key %q in \"## Reporting\": ignored", k)
		}
	}
}

func (ps *parser) manager(line int, v string) {
	if v == "" || strings.Contains(v, Placeholder) {
		return // Missing reports it
	}
	if id, ok := parseUserRef(v); ok {
		ps.set(&ps.p.Manager.UserID, kindReporting, "Manager", line, id)
		return
	}
	ps.warn(line, "manager %q is a handle, not a user id: DMs will not be answered", v)
	if ps.p.Manager.Handle == "" {
		ps.p.Manager.Handle = strings.TrimPrefix(v, "@")
	}
}

func (ps *parser) backup(line int, v string) {
	if v == "" || strings.Contains(v, Placeholder) {
		return
	}
	if id, ok := parseUserRef(v); ok {
		ps.set(&ps.p.BackupManager.UserID, kindReporting, "Backup manager", line, id)
		return
	}
	ps.warn(line, "backup manager %q is a handle, not a user id: ignored", v)
	if ps.p.BackupManager.Handle == "" {
		ps.p.BackupManager.Handle = strings.TrimPrefix(v, "@")
	}
}

// channels adds the references of a channel list. A bullet that is not a
// usable reference is warned about; a prose line is read when it is one and
// skipped otherwise.
func (ps *parser) channels(s section, kind string, list []ChannelRef) []ChannelRef {
	for _, it := range items(s.body, false) {
		ref, problem := parseChannelRef(it.text)
		if problem != "" {
			if it.bullet {
				ps.warn(it.line, "%s: ignored", problem)
			}
			continue
		}
		i, dup := ps.pos[kind+"/"+ref.ID]
		switch {
		case !dup:
			ps.pos[kind+"/"+ref.ID] = len(list)
			list = append(list, ref)
		case list[i].Name == "":
			list[i].Name = ref.Name
		}
	}
	return list
}

func (ps *parser) approvers(s section) {
	for _, it := range items(s.body, false) {
		a, warns, ok := parseApprover(it.text)
		if !it.bullet && !ok {
			continue // prose
		}
		for _, w := range warns {
			ps.warn(it.line, "%s", w)
		}
		if !ok {
			continue
		}
		i, dup := ps.pos[kindApprovers+"/"+a.UserID]
		if !dup {
			ps.pos[kindApprovers+"/"+a.UserID] = len(ps.p.Approvers)
			for j, sc := range a.Scopes {
				ps.pos["scope/"+a.UserID+"/"+sc] = j
			}
			ps.addText("comment/"+a.UserID, a.Comment)
			ps.p.Approvers = append(ps.p.Approvers, a)
			continue
		}
		prev := &ps.p.Approvers[i]
		for _, sc := range a.Scopes {
			if _, dup := ps.pos["scope/"+a.UserID+"/"+sc]; !dup {
				ps.pos["scope/"+a.UserID+"/"+sc] = len(prev.Scopes)
				prev.Scopes = append(prev.Scopes, sc)
			}
		}
		ps.addText("comment/"+a.UserID, a.Comment)
	}
}

func (ps *parser) redaction(s section) error {
	for _, it := range items(s.body, false) {
		if !it.bullet {
			ps.warn(it.line, "line in \"## Redaction\" ignored: patterns are bullets, \"- <regex> ; <description>\"")
			continue
		}
		pattern, desc := splitRedaction(it.text)
		if _, err := compileRedaction(ps.file, it.line, pattern); err != nil {
			return err
		}
		ps.p.Redactions = append(ps.p.Redactions, Redaction{Pattern: pattern, Description: desc, Line: it.line})
	}
	return nil
}

func (ps *parser) blocked(s section) {
	for _, it := range items(s.body, false) {
		ref, _, _ := strings.Cut(it.text, ";")
		id, ok := parseUserRef(ref)
		switch {
		case !ok && it.bullet:
			ps.warn(it.line, "blocked user %q is not a user id (<@U…>): ignored", strings.TrimSpace(ref))
		case ok:
			if _, dup := ps.pos[kindBlocked+"/"+id]; !dup {
				ps.pos[kindBlocked+"/"+id] = len(ps.p.Blocked)
				ps.p.Blocked = append(ps.p.Blocked, id)
			}
		}
	}
}

// maxTimeout bounds the approval timeout so that it fits a time.Duration
// with room to spare (about 68 years).
const maxTimeout = 1<<31 - 1

func (ps *parser) timeout(s section) error {
	for _, it := range items(s.body, false) {
		v, _, _ := strings.Cut(it.text, ";")
		if _, val, ok := splitKV(v); ok {
			v = val
		}
		v = strings.TrimSpace(v)
		num := v
		for _, unit := range []string{"seconds", "second", "secs", "sec", "s"} {
			if t, ok := strings.CutSuffix(num, unit); ok {
				num = strings.TrimSpace(t)
				break
			}
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || n > maxTimeout {
			return ps.fail(it.line, "invalid approval timeout %q: want a whole number of seconds (0 waits forever)", v)
		}
		if first, dup := ps.keys["timeout"]; dup {
			ps.warn(it.line, "approval timeout is given twice (first at line %d): using this one", first)
		}
		ps.keys["timeout"] = it.line
		ps.p.ApprovalTimeoutSeconds = n
	}
	return nil
}

// modeNames maps normalised spellings, including the agent SDK's own
// (bypassPermissions, acceptEdits, dontAsk), to the modes' names.
var modeNames = map[string]string{
	"ask": "ask", "acceptedits": "accept-edits", "bypass": "bypass",
	"bypasspermissions": "bypass", "plan": "plan", "dontask": "dont-ask",
}

func (ps *parser) channel(s section, arg string) error {
	ref, problem := parseChannelRef(arg)
	if problem != "" {
		ps.warn(s.line, "section %q: %s: section ignored", "## "+s.name, problem)
		return nil
	}
	ps.once("channel:"+ref.ID, s)
	if ps.p.Channels == nil {
		ps.p.Channels = make(map[string]ChannelOverride)
	}
	o := ps.p.Channels[ref.ID]
	o.ID = ref.ID
	if o.Name == "" {
		o.Name = ref.Name
	}
	var text []srcLine
	for _, l := range s.body {
		t := strings.TrimSpace(l.text)
		if b, ok := bullet(t); ok {
			t = b
		}
		k, v, ok := splitKV(t)
		if l.fenced || !ok || normKey(k) != "mode" {
			text = append(text, l)
			continue
		}
		name := unemphasize(v)
		if name == "" {
			ps.warn(l.n, "empty mode of %s: ignored", ref)
			continue
		}
		if canon, ok := modeNames[normKey(name)]; ok {
			name = canon
		}
		m, err := pipeline.ParseMode(name)
		if err != nil {
			return &ParseError{File: ps.file, Line: l.n, Msg: fmt.Sprintf("%q: %v", "## "+s.name, err), Err: err}
		}
		if o.Mode != "" {
			ps.warn(l.n, "mode of %s is given twice: using this one", ref)
		}
		o.Mode = m
	}
	ps.addText("channel/"+ref.ID, freeText(text))
	ps.p.Channels[ref.ID] = o
	return nil
}

func (ps *parser) extra(s section) {
	text := freeText(s.body)
	if text == "" {
		return
	}
	key := "extra/" + normName(s.name)
	if _, seen := ps.pos[key]; !seen {
		ps.pos[key] = len(ps.p.Extra)
		ps.p.Extra = append(ps.p.Extra, Section{Name: s.name})
	}
	ps.addText(key, text)
}

// MaxSuggestedPrompts is how many suggested prompts the platform shows
// (assistant.threads.setSuggestedPrompts takes up to four).
const MaxSuggestedPrompts = 4

// prompts reads "## Suggested prompts": one prompt per bullet (a wrapped
// bullet is one prompt); prose lines are ignored with a warning, and so
// are the prompts past the platform's four.
func (ps *parser) prompts(s section) {
	for _, it := range items(s.body, true) {
		switch {
		case !it.bullet:
			ps.warn(it.line, "line in \"## Suggested prompts\" ignored: prompts are bullets, one prompt each")
		case len(ps.p.SuggestedPrompts) == MaxSuggestedPrompts:
			ps.warn(it.line, "suggested prompt ignored: the platform offers at most %d", MaxSuggestedPrompts)
		default:
			ps.p.SuggestedPrompts = append(ps.p.SuggestedPrompts, it.text)
		}
	}
}
