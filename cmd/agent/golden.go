package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/persona-runtime/agent/internal/fsutil"
	"github.com/persona-runtime/agent/internal/sim"
	simchat "github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/textdiff"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Golden transcripts: the whole conversation a scenario produces, rendered
// deterministically (ids, timestamps, temporary paths replaced by stable
// names), kept beside the scenario as <name>.golden and compared on every
// `agent sim run`. The format (README, "Golden transcripts"):
//
//	> t1 m1 · C0TEAM [trusted] · member <@U0ALICE>: <@U0BOT> please deploy
//	  dropped: duplicate
//	  tool mcp__agent_chat__request_approval {"category":"deploy",…} → ok: approved by <@U0APP>
//	< t1 m2 card ap1 · approval · deploy · [approve, deny]: deploy prod
//	< t1 m2 card ap1 resolved: approved by <@U0APP>
//	< t1 m3 post: approved by <@U0APP>
//
// ">" is what people do, "<" what the bot shows, indented lines what
// happened in between (drops, tool calls).

// goldenPath is the golden file of a scenario file.
func goldenPath(scenario string) string {
	return strings.TrimSuffix(scenario, filepath.Ext(scenario)) + ".golden"
}

// toolCall is one tool call the engine reported, placed after the
// transcript entries that existed when it ended.
type toolCall struct {
	after int // len(transcript) when the call ended
	line  string
}

// toolLog collects the tool calls of one simulation.
type toolLog struct {
	mu    sync.Mutex
	calls []toolCall
}

func (l *toolLog) add(after int, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, toolCall{after: after, line: line})
}

func (l *toolLog) list() []toolCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// toolLine renders a tool call: the tool, its input (redacted, on one
// line, cut at 160 characters) and its outcome with the first line of its
// result.
func toolLine(name, input, result, outcome string) string {
	// The model's JSON as a person writes it: no \u003c for "<".
	var v any
	if json.Unmarshal([]byte(input), &v) == nil {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) == nil {
			input = strings.TrimSpace(b.String())
		}
	}
	line := "tool " + name + " " + oneLine(input, 160) + " → " + outcome
	if r := oneLine(result, 100); r != "" {
		line += ": " + r
	}
	return line
}

// injected is an event the scenario handed to the service.
type injected struct {
	id, typ string
}

// renamer gives the run's ids and timestamps stable names in order of
// first appearance: threads t1, t2, …, messages m1, m2, …, cards ap1, ….
type renamer struct {
	threads, msgs, cards map[string]string
	replace              []string // old, new pairs for free text
}

func newRenamer() *renamer {
	return &renamer{threads: map[string]string{}, msgs: map[string]string{}, cards: map[string]string{}}
}

func (n *renamer) name(m map[string]string, prefix, id string) string {
	if id == "" {
		return ""
	}
	if v, ok := m[id]; ok {
		return v
	}
	v := fmt.Sprintf("%s%d", prefix, len(m)+1)
	m[id] = v
	if prefix == "m" {
		n.replace = append(n.replace, id, v)
	}
	return v
}

func (n *renamer) thread(root string) string {
	if root == "" {
		return "top"
	}
	return n.name(n.threads, "t", root)
}

func (n *renamer) msg(ts string) string { return n.name(n.msgs, "m", ts) }

// text replaces the timestamps named so far in s.
func (n *renamer) text(s string) string {
	if len(n.replace) == 0 {
		return s
	}
	return strings.NewReplacer(n.replace...).Replace(s)
}

// renderGolden renders the transcript of a finished scenario.
func (r *scenarioRun) renderGolden() string {
	w := r.w
	world := sim.DefaultWorld().Merge(r.sc.Soul)
	msgs := w.mem.Messages()
	calls := w.tools.list()
	w.mu.Lock()
	drops := maps.Clone(w.drops)
	events := slices.Clone(w.injected)
	w.mu.Unlock()

	n := newRenamer()
	// Name every ts in transcript order first, so that a tool result that
	// quotes a later message's ts still gets a stable name.
	for _, m := range msgs {
		if m.Op == simchat.OpInbound || m.Op == simchat.OpPost || m.Op == simchat.OpUpload {
			root := m.ThreadTS
			if root == "" {
				root = m.TS
			}
			n.thread(root)
			n.msg(m.TS)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", r.sc.Name)
	fmt.Fprintf(&b, "# layer %s · actor %s · agent %s\n", r.sc.Layer, r.sc.As, orDefault(r.sc.AgentBehavior, "reply"))
	inbound := 0
	ci := 0
	flushTools := func(upTo int) {
		for ci < len(calls) && calls[ci].after <= upTo {
			b.WriteString("  " + r.clean(n, calls[ci].line) + "\n")
			ci++
		}
	}
	for i, m := range msgs {
		flushTools(i)
		switch m.Op {
		case simchat.OpInbound:
			var ev injected
			if inbound < len(events) {
				ev = events[inbound]
			}
			inbound++
			b.WriteString(r.clean(n, r.inboundLine(n, world, m, ev)) + "\n")
			if reason, ok := drops[ev.id]; ok {
				fmt.Fprintf(&b, "  dropped: %s\n", reason)
			}
		default:
			b.WriteString(r.clean(n, outboundLine(n, m)) + "\n")
		}
	}
	flushTools(len(msgs))
	// No trailing blanks: editors strip them, and the file must not change.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// clean replaces the names of the run's temporary home and timestamps.
func (r *scenarioRun) clean(n *renamer, s string) string {
	if r.w.home != "" {
		s = strings.ReplaceAll(s, r.w.home, "$AGENT_HOME")
	}
	return n.text(s)
}

// who is a person as "role <@U…>".
func who(world sim.World, user string) string {
	for _, role := range []string{"manager", "backup", "approver", "member", "outsider"} {
		if u, ok := world.RoleUser(role); ok && u == user {
			return role + " <@" + user + ">"
		}
	}
	if user == simBot.UserID {
		return "the bot <@" + user + ">"
	}
	return "<@" + user + ">"
}

// layerOf is the trust layer of a channel in world.
func layerOf(world sim.World, channel string) string {
	switch {
	case strings.HasPrefix(channel, "D"):
		return "dm"
	case slices.ContainsFunc(world.Trusted, func(c string) bool { return strings.Contains(c, channel) }):
		return "trusted"
	case slices.ContainsFunc(world.Allowed, func(c string) bool { return strings.Contains(c, channel) }):
		return "allowed"
	}
	return "restricted"
}

func (r *scenarioRun) inboundLine(n *renamer, world sim.World, m simchat.Entry, ev injected) string {
	root := m.ThreadTS
	if root == "" {
		root = m.TS
	}
	t := n.thread(root)
	where := fmt.Sprintf("%s [%s] · %s", m.ChannelID, layerOf(world, m.ChannelID), who(world, m.UserID))
	switch {
	case m.Action != nil:
		return fmt.Sprintf("> %s · %s clicks %s on %s (card %s)", t, where, m.Action.ActionID, n.msg(m.Action.MessageTS),
			n.name(n.cards, "ap", m.Action.Value))
	case m.Kind == pipeline.KindCommand:
		return fmt.Sprintf("> %s · %s: %s", t, where, m.Text)
	case ev.typ == "app_mention":
		return fmt.Sprintf("> %s %s · the same message again, as app_mention", t, n.msg(m.TS))
	}
	line := fmt.Sprintf("> %s %s · %s: %s", t, n.msg(m.TS), where, indentText(m.Text))
	for _, f := range m.Files {
		line += "\n  + file " + f.Name
	}
	return line
}

func outboundLine(n *renamer, m simchat.Entry) string {
	thread := n.thread(m.ThreadTS)
	switch m.Op {
	case simchat.OpPost, simchat.OpUpdate:
		if c := m.Card; c != nil {
			id := n.name(n.cards, "ap", c.ID)
			if len(c.Actions) == 0 {
				return fmt.Sprintf("< %s %s card %s resolved: %s", thread, n.msg(m.TS), id, c.Outcome)
			}
			line := fmt.Sprintf("< %s %s card %s · %s · %s · [%s]: %s", thread, n.msg(m.TS), id, c.Kind, c.Category,
				strings.Join(c.Actions, ", "), indentText(c.Summary))
			if c.Details != "" {
				line += "\n  | " + indentText(c.Details)
			}
			return line
		}
		verb := "post"
		if m.Op == simchat.OpUpdate {
			verb = "edit"
		}
		line := fmt.Sprintf("< %s %s %s: %s", thread, n.msg(m.TS), verb, indentText(m.Text))
		if m.Feedback {
			line += "\n  [feedback buttons: good | bad]"
		}
		return line
	case simchat.OpEphemeral:
		return fmt.Sprintf("< %s only <@%s> sees: %s", thread, m.To, indentText(m.Text))
	case simchat.OpStatus:
		return fmt.Sprintf("< %s status: %s", thread, orDefault(m.Text, "(cleared)"))
	case simchat.OpUpload:
		line := fmt.Sprintf("< %s %s upload", thread, n.msg(m.TS))
		for _, f := range m.Files {
			line += fmt.Sprintf(" %s %q (%d bytes)", f.Name, f.Title, len(f.Content))
		}
		if m.Text != "" {
			line += ": " + indentText(m.Text)
		}
		return line
	}
	return fmt.Sprintf("< %s %s: %s", thread, m.Op, indentText(m.Text))
}

// indentText keeps a multi-line text readable: its later lines go on their
// own lines, marked "  | ".
func indentText(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  | ")
}

// checkGolden compares a scenario's transcript with its golden file, or
// rewrites the file with update. note says what happened: "" (it matched),
// "no golden file", "updated".
func checkGolden(file, transcript string, update bool) (note string, err error) {
	path := goldenPath(file)
	want, rerr := os.ReadFile(path)
	switch {
	case update:
		if rerr == nil && string(want) == transcript {
			return "", nil
		}
		if err := fsutil.WriteFileAtomic(path, []byte(transcript), 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
		return "updated " + filepath.Base(path), nil
	case os.IsNotExist(rerr):
		return "no golden file", nil
	case rerr != nil:
		return "", rerr
	}
	if string(want) == transcript {
		return "", nil
	}
	diff := textdiff.Unified(filepath.Base(path), "this run", string(want), transcript)
	return "", fmt.Errorf("transcript differs from %s (agent sim run --update rewrites it):\n%s", filepath.Base(path),
		"    "+strings.ReplaceAll(strings.TrimRight(diff, "\n"), "\n", "\n    "))
}
