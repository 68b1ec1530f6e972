package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

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
}

// Check decides whether the call may run. When it may not, the returned
// Result is the refusal the model reads (is_error). An approval releases
// exactly this call, once: the next call, changed or not, is decided anew.
func (g *ToolGate) Check(ctx context.Context, t *pipeline.Turn, tool string, input json.RawMessage) (bool, tools.Result, error) {
	key := t.Event.ThreadKey()
	perm := tools.Permission{Mode: t.Access.Mode, AutoAllow: g.AutoAllow, Always: func(name string) bool {
		ok, err := g.Gate.o.Store.ToolAllowed(ctx, key, name)
		if err != nil {
			g.Gate.o.Log.WarnContext(ctx, "read always-allowed tools", "err", err)
		}
		return ok
	}}
	switch perm.Decide(tool) {
	case tools.Allow:
		return true, tools.Result{}, nil
	case tools.Deny:
		return false, tools.Errorf("%s is not allowed in this thread (permission mode %s)", tool, t.Access.Mode), nil
	}
	out, err := g.Gate.Ask(ctx, Request{
		ThreadKey:   key,
		ChannelID:   t.Event.ChannelID,
		ThreadTS:    t.Event.RootTS(),
		RequestedBy: t.Event.UserID,
		Category:    tools.Category(tool),
		Tool:        tool,
		Summary:     g.Redact(Summarize(tool, input)),
		Digest:      Digest(tool, input),
		OfferAlways: tools.KindOf(tool) != tools.KindPublish,
	})
	if err != nil {
		return false, tools.Result{}, err
	}
	if out.Approved() {
		return true, tools.Result{}, nil
	}
	return false, tools.Errorf("%s was not run: %s", tool, out.Text()), nil
}

// Digest identifies one exact call: the tool's name and its input, with the
// input's keys in a canonical order.
func Digest(tool string, input json.RawMessage) string {
	canon := input
	var v any
	if json.Unmarshal(input, &v) == nil {
		if b, err := json.Marshal(v); err == nil { // maps marshal with sorted keys
			canon = b
		}
	}
	sum := sha256.Sum256(append([]byte(tool+"\x00"), canon...))
	return hex.EncodeToString(sum[:6])
}

// maxSummary keeps a card's summary readable; the digest identifies the
// exact call.
const maxSummary = 600

// Summarize renders a call for a person: the command of Bash, the path of
// file tools, otherwise the input as compact JSON.
func Summarize(tool string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	var s string
	switch tool {
	case "Bash":
		s = fmt.Sprintf("`%s` wants to run:\n```\n%s\n```", tool, str("command"))
	case "Write", "Edit", "Read":
		s = fmt.Sprintf("`%s` %s", tool, str("file_path"))
	default:
		compact := strings.TrimSpace(string(input))
		s = fmt.Sprintf("`%s` %s", tool, compact)
	}
	if len(s) > maxSummary {
		s = s[:maxSummary] + "…"
	}
	return s
}
