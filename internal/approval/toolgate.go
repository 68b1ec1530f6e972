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
	// InSkills, when set, reports whether a file tool's path, for the
	// thread threadKey, reaches <Home>/skills: a Write or Edit there
	// changes the skills as write_skill does. nil counts only the skills
	// tools as changes to the skills.
	InSkills func(threadKey, path string) bool
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
	byManager := t.Access.Role == pipeline.RoleManager || t.Access.Role == pipeline.RoleBackup
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
	skills := g.changesSkills(key, tool, input)
	decide := perm.Decide
	if skills {
		decide = perm.DecideSkillChange
	}
	switch decide(tool) {
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
	// Redaction runs on each field before it is rendered, so a secret is
	// never cut in two before redaction sees it; the digest is of the
	// real call.
	call := renderCall(tool, input, redact)
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
// asked in a turn whose sender is not a manager (and of sync_manifest).
const SkillsCategory = "skills"

// changesSkills reports whether the call changes the skills: write_skill,
// delete_skill, or a Write or Edit whose file_path reaches skills/.
func (g *ToolGate) changesSkills(threadKey, tool string, input json.RawMessage) bool {
	if tools.SkillChange(tool) {
		return true
	}
	if (tool != "Write" && tool != "Edit") || g.InSkills == nil {
		return false
	}
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(input, &in) != nil {
		return false // the tool refuses an input it cannot decode
	}
	return g.InSkills(threadKey, in.FilePath)
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
