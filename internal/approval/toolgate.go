package approval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// ToolGate applies the permission modes to each tool call of a turn and asks
// through the Gate when a call needs a card.
type ToolGate struct {
	Gate      *Gate
	AutoAllow map[string]bool
	// Redact scrubs the call's summary before it is shown on the card.
	Redact func(string) string
	// Shared, when set, reports which folder every conversation reads a
	// file tool's path, for the thread threadKey, reaches: "skills" or
	// "knowledge" ("" for neither), and the path from AGENT_HOME the card
	// names (tools.Builtins.Shared). A Write or Edit under skills/
	// changes the skills as write_skill does. nil counts only the skills
	// tools as writes there.
	Shared func(threadKey, path string) (folder, rel string)
	// ActsAs, when set, reports the tool server whose tool acts with the
	// turn's sender's own account ("auth": "oauth"): the card says whose.
	ActsAs func(tool string) (server string, ok bool)
}

// Check decides whether the call may run. When it may not, the returned
// Result is the refusal the model reads (is_error). An approval releases
// exactly this call, once: the next call, changed or not, is decided anew.
func (g *ToolGate) Check(ctx context.Context, t *pipeline.Turn, tool string, input json.RawMessage) (bool, tools.Result, error) {
	key := t.Event.ThreadKey()
	redact := g.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	// In a public (allowed) channel every tool outside the auto-allow list
	// needs a card, every time: "always" is neither offered nor honoured.
	public := t.Access.Layer == pipeline.LayerAllowed
	byManager := t.Access.Managing()
	perm := tools.Permission{Mode: t.Access.Mode, AutoAllow: g.AutoAllow, ByManager: byManager}
	if !public {
		perm.Always = func(name string) bool {
			ok, err := g.Gate.o.Store.ToolAllowed(ctx, key, name)
			if err != nil {
				g.Gate.o.Log.WarnContext(ctx, "read always-allowed tools", "err", err)
			}
			return ok
		}
	}
	folder, path := g.sharedWrite(key, tool, input)
	skills := folder == SkillsCategory
	decide := perm.Decide
	if skills {
		decide = perm.DecideSkillChange
	}
	verdict := decide(tool)
	// A write where every conversation reads it, from one more private
	// than the persona's most public layer, crosses a wall: what was said
	// there would reach people it was not said to. It asks a card in
	// every mode, bypass included; the auto-allow list and "always" do
	// not let it through, and what is refused stays refused (plan,
	// dont-ask).
	walled := folder != "" && t.Access.Walled()
	if walled && verdict == tools.Allow {
		verdict = tools.Ask
	}
	switch verdict {
	case tools.Allow:
		return true, tools.Result{}, nil
	case tools.Deny:
		return false, tools.Errorf("%s is not allowed in this thread (permission mode %s)", tool, t.Access.Mode), nil
	}
	category, always := tools.Category(tool), tools.KindOf(tool) != tools.KindPublish && !public
	if skills && !byManager {
		// Decided once, by a manager or an approver for skills (Click
		// refuses anyone else, the member who asked among them): "always"
		// would let the thread plant the next one unseen.
		category, always = SkillsCategory, false
	}
	var lead []part
	if walled {
		// Decided once, by whoever may decide what every channel reads.
		category, always = folder, false
		lead = wallParts(path, redact)
	}
	var actsAs string
	if g.ActsAs != nil {
		if server, ok := g.ActsAs(tool); ok {
			actsAs = server // the card says whose account, above the summary
		}
	}
	// Redaction runs on each field before it is rendered, so a secret is
	// never cut in two before redaction sees it; the digest is of the
	// real call.
	call := renderCall(tool, input, redact, lead...)
	req := Request{
		ThreadKey:   key,
		ChannelID:   t.Event.ChannelID,
		ThreadTS:    t.Event.RootTS(),
		RequestedBy: t.Event.UserID,
		Category:    category,
		Tool:        tool,
		Summary:     call.Card,
		Digest:      Digest(tool, input),
		OfferAlways: always,
		ActsAs:      actsAs,
	}
	if call.Cut {
		req.Attachment = call.Full
	}
	out, err := g.Gate.Ask(ctx, req)
	if err != nil {
		return false, tools.Result{}, err
	}
	if out.Approved() {
		return true, tools.Result{}, nil
	}
	return false, tools.Errorf("%s was not run: %s", tool, out.Text()), nil
}

// SkillsCategory is the approval category of a change to the skills
// asked in a turn whose sender is not a manager, of a write to skills/
// from a walled conversation (pipeline.Access.Walled), and of
// sync_manifest.
const SkillsCategory = tools.SharedSkills

// KnowledgeCategory is the approval category of a write to knowledge/
// from a walled conversation.
const KnowledgeCategory = tools.SharedKnowledge

// WallSentence ends the first line of the card of a write to a folder
// every conversation reads, from a walled conversation: "This writes to
// <path>" and it.
const WallSentence = ", which every channel the persona serves can read."

// wallParts is the line a walled write's card starts with.
func wallParts(path string, redact func(string) string) []part {
	return []part{{kind: prose, text: "This writes to "}, {kind: inline, text: redact(path), mode: modeInline},
		{kind: prose, text: WallSentence + "\n"}}
}

// sharedWrite reports whether the call writes to a folder every
// conversation of the persona reads: folder is SkillsCategory or
// KnowledgeCategory ("" for none) and path the place, from AGENT_HOME,
// the card names. write_skill and delete_skill write skills/<slug>; a
// Write or Edit, wherever its file_path reaches (Shared).
func (g *ToolGate) sharedWrite(threadKey, tool string, input json.RawMessage) (folder, path string) {
	if tools.SkillChange(tool) {
		var in struct {
			Slug string `json:"slug"`
		}
		_ = json.Unmarshal(input, &in) // the tool refuses an input it cannot decode
		path = SkillsCategory + "/" + in.Slug
		if tool == tools.SkillsWrite {
			path += "/SKILL.md"
		}
		return SkillsCategory, path
	}
	if (tool != "Write" && tool != "Edit") || g.Shared == nil {
		return "", ""
	}
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(input, &in) != nil {
		return "", "" // the tool refuses an input it cannot decode
	}
	return g.Shared(threadKey, in.FilePath)
}

// Digest identifies one exact call: the tool's name and its input, with the
// input's keys in a canonical order (numbers kept exact).
func Digest(tool string, input json.RawMessage) string {
	canon := input
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) == nil && dec.Decode(new(any)) == io.EOF {
		if b, err := json.Marshal(v); err == nil { // maps marshal with sorted keys
			canon = b
		}
	}
	sum := sha256.Sum256(append([]byte(tool+"\x00"), canon...))
	return hex.EncodeToString(sum[:6])
}

// Summarize renders a call for a person as its card shows it: the whole
// command of Bash, the content of Write, the change of Edit as a diff,
// otherwise the whole input as JSON, in the visible notation (visible.go)
// and cut only where the card says so.
func Summarize(tool string, input json.RawMessage) string {
	return renderCall(tool, input, func(s string) string { return s }).Card
}
