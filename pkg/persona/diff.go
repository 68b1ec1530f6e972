package persona

import (
	"fmt"
	"slices"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Change is one line of Diff: who gains or loses what between two SOUL.md
// files. Gain is true for access gained (the line starts "+"), false for
// access lost ("-").
type Change struct {
	Gain bool
	Text string
}

// String renders the change as validate-soul --diff prints it:
// "+ <@U1> becomes approver (scope skills)", "- #ops no longer trusted".
func (c Change) String() string {
	if c.Gain {
		return "+ " + c.Text
	}
	return "- " + c.Text
}

// Aspect is one part of a persona's access that Diff compares: its
// changes between before and after, in a stable order.
type Aspect struct {
	Name    string
	Compare func(before, after *Persona) []Change
}

// Aspects are what Diff compares, in the order it prints them. A section
// that gives or takes access (a new "## …" list) adds its aspect here.
var Aspects = []Aspect{
	{"managers", diffManagers},
	{"approvers", diffApprovers},
	{"channels", diffChannels},
	{"direct messages", diffDMs},
	{"channel modes", diffModes},
	{"blocked", diffBlocked},
	{"budgets", diffBudgets},
	{"peers", diffPeers},
	{"network", diffNetwork},
}

// Diff is every change of who may do what between before and after: people
// gaining or losing a role or scope, channels entering or leaving a trust
// layer, DMs opening or closing, channel modes, blocked people and the
// budgets, one Change each, aspect by aspect.
func Diff(before, after *Persona) []Change {
	var out []Change
	for _, a := range Aspects {
		out = append(out, a.Compare(before, after)...)
	}
	return out
}

// Gains reports whether any change gives access: what a review must see.
func Gains(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Gain })
}

func mention(id string) string { return "<@" + id + ">" }

// channelName is a channel as a diff line writes it: "#ops" when SOUL.md
// gives its name, else the platform's "<#C…>".
func channelName(c ChannelRef) string {
	if c.Name != "" {
		return "#" + c.Name
	}
	return "<#" + c.ID + ">"
}

func diffManagers(before, after *Persona) []Change {
	var out []Change
	for _, r := range []struct {
		role     string
		old, new string
	}{
		{"manager", before.Manager.UserID, after.Manager.UserID},
		{"backup manager", before.BackupManager.UserID, after.BackupManager.UserID},
	} {
		if r.old == r.new {
			continue
		}
		if r.old != "" {
			out = append(out, Change{Text: mention(r.old) + " no longer " + r.role})
		}
		if r.new != "" {
			out = append(out, Change{Gain: true, Text: mention(r.new) + " becomes " + r.role})
		}
	}
	return out
}

func scopeList(scopes []string) string {
	word := "scope"
	if len(scopes) > 1 {
		word = "scopes"
	}
	return word + " " + strings.Join(scopes, ", ")
}

func approverScopes(p *Persona) (ids []string, scopes map[string][]string) {
	scopes = map[string][]string{}
	for _, a := range p.Approvers {
		if _, ok := scopes[a.UserID]; !ok {
			ids = append(ids, a.UserID)
		}
		for _, s := range a.Scopes {
			if !slices.Contains(scopes[a.UserID], s) {
				scopes[a.UserID] = append(scopes[a.UserID], s)
			}
		}
	}
	return ids, scopes
}

func diffApprovers(before, after *Persona) []Change {
	oldIDs, oldScopes := approverScopes(before)
	newIDs, newScopes := approverScopes(after)
	var out []Change
	for _, id := range oldIDs {
		now, still := newScopes[id]
		if !still {
			out = append(out, Change{Text: mention(id) + " no longer approver (" + scopeList(oldScopes[id]) + ")"})
			continue
		}
		if lost := missingFrom(oldScopes[id], now); len(lost) > 0 {
			out = append(out, Change{Text: mention(id) + " loses approver " + scopeList(lost)})
		}
		if gained := missingFrom(now, oldScopes[id]); len(gained) > 0 {
			out = append(out, Change{Gain: true, Text: mention(id) + " gains approver " + scopeList(gained)})
		}
	}
	for _, id := range newIDs {
		if _, was := oldScopes[id]; !was {
			out = append(out, Change{Gain: true, Text: mention(id) + " becomes approver (" + scopeList(newScopes[id]) + ")"})
		}
	}
	return out
}

// missingFrom is a's items that b lacks, in a's order.
func missingFrom(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// layerRank orders the channel layers by what a member may do there:
// nothing in a restricted channel, speak with tools that always ask in an
// allowed one, speak in the thread's mode in a trusted one.
var layerRank = map[pipeline.Layer]int{pipeline.LayerRestricted: 0, pipeline.LayerAllowed: 1, pipeline.LayerTrusted: 2}

func diffChannels(before, after *Persona) []Change {
	var refs []ChannelRef
	seen := map[string]bool{}
	for _, list := range [][]ChannelRef{before.Trusted, before.Allowed, after.Trusted, after.Allowed} {
		for _, c := range list {
			if !seen[c.ID] {
				seen[c.ID] = true
				refs = append(refs, c)
			}
		}
	}
	var out []Change
	for _, c := range refs {
		was, is := before.Layer(c.ID, false), after.Layer(c.ID, false)
		if was == is {
			continue
		}
		name := channelName(c)
		switch {
		case is == pipeline.LayerRestricted:
			out = append(out, Change{Text: fmt.Sprintf("%s no longer %s", name, was)})
		case was == pipeline.LayerRestricted:
			out = append(out, Change{Gain: true, Text: fmt.Sprintf("%s becomes %s", name, is)})
		default:
			out = append(out, Change{Gain: layerRank[is] > layerRank[was], Text: fmt.Sprintf("%s becomes %s (was %s)", name, is, was)})
		}
	}
	return out
}

func diffDMs(before, after *Persona) []Change {
	switch {
	case !before.DMOpen() && after.DMOpen():
		return []Change{{Gain: true, Text: "anyone can now DM the persona"}}
	case before.DMOpen() && !after.DMOpen():
		return []Change{{Text: "only the manager and the backup manager can DM the persona now"}}
	}
	return nil
}

// modeRank orders the permission modes by what a turn may do unasked. A
// channel without a mode of its own has the default mode
// (AGENT_DEFAULT_MODE), which this file does not say: it ranks just above
// ask, so that a change either way toward it is read the cautious way.
var modeRank = map[pipeline.Mode]int{pipeline.ModePlan: 0, pipeline.ModeDontAsk: 2, pipeline.ModeAsk: 4, "": 5,
	pipeline.ModeAcceptEdits: 6, pipeline.ModeBypass: 8}

func modeName(m pipeline.Mode) string {
	if m == "" {
		return "the default mode"
	}
	return string(m)
}

func diffModes(before, after *Persona) []Change {
	var ids []string
	for _, p := range []*Persona{before, after} {
		for id := range p.Channels {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	var out []Change
	for _, id := range ids {
		was, is := before.Channels[id].Mode, after.Channels[id].Mode
		if was == is {
			continue
		}
		ref := ChannelRef{ID: id, Name: cmpOr(after.Channels[id].Name, before.Channels[id].Name)}
		out = append(out, Change{Gain: modeRank[is] > modeRank[was],
			Text: fmt.Sprintf("%s runs in %s (was %s)", channelName(ref), modeName(is), modeName(was))})
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func diffBlocked(before, after *Persona) []Change {
	var out []Change
	for _, id := range after.Blocked {
		if !slices.Contains(before.Blocked, id) {
			out = append(out, Change{Text: mention(id) + " becomes blocked"})
		}
	}
	for _, id := range before.Blocked {
		if !slices.Contains(after.Blocked, id) {
			out = append(out, Change{Gain: true, Text: mention(id) + " no longer blocked"})
		}
	}
	return out
}

// diffPeers: a peer may start a turn by mentioning the persona, so a new
// peer is access gained.
func diffPeers(before, after *Persona) []Change {
	var out []Change
	for _, id := range missingFrom(after.Peers, before.Peers) {
		out = append(out, Change{Gain: true, Text: mention(id) + " becomes a peer (its mentions start turns)"})
	}
	for _, id := range missingFrom(before.Peers, after.Peers) {
		out = append(out, Change{Text: mention(id) + " no longer a peer"})
	}
	return out
}

// diffNetwork: a host entering "## Network" is a host the agent's commands
// may now reach.
func diffNetwork(before, after *Persona) []Change {
	hosts := func(p *Persona) []string {
		var out []string
		for _, h := range p.Network {
			out = append(out, h.String())
		}
		return out
	}
	o, n := hosts(before), hosts(after)
	var out []Change
	for _, h := range missingFrom(n, o) {
		out = append(out, Change{Gain: true, Text: "commands may now reach " + h})
	}
	for _, h := range missingFrom(o, n) {
		out = append(out, Change{Text: "commands may no longer reach " + h})
	}
	return out
}

// budgetCap is one cap of "## Budgets" as the diff names it.
type budgetCap struct {
	name     string
	old, new float64
	format   func(float64) string
}

func diffBudgets(before, after *Persona) []Change {
	o, n := before.Budgets, after.Budgets
	tokens := func(unit string) func(float64) string {
		return func(v float64) string { return fmt.Sprintf("%d %s", int64(v), unit) }
	}
	dollars := func(unit string) func(float64) string {
		return func(v float64) string { return FormatUSD(v) + unit }
	}
	caps := []budgetCap{
		{"thread", float64(o.Thread), float64(n.Thread), tokens("tokens")},
		{"channel", float64(o.Channel), float64(n.Channel), tokens("tokens/day")},
		{"persona", float64(o.Persona), float64(n.Persona), tokens("tokens/day")},
		{"person", float64(o.Person), float64(n.Person), tokens("tokens/day")},
		{"channel", o.ChannelUSD, n.ChannelUSD, dollars("/day")},
		{"persona", o.PersonaUSD, n.PersonaUSD, dollars("/day")},
		{"schedule", o.ScheduleUSD, n.ScheduleUSD, dollars("/run")},
	}
	var out []Change
	for _, c := range caps {
		switch {
		case c.old == c.new:
		case c.new == 0:
			out = append(out, Change{Gain: true, Text: fmt.Sprintf("%s budget of %s removed", c.name, c.format(c.old))})
		case c.old == 0:
			out = append(out, Change{Text: fmt.Sprintf("%s budget set to %s", c.name, c.format(c.new))})
		case c.new > c.old:
			out = append(out, Change{Gain: true, Text: fmt.Sprintf("%s budget raised to %s (was %s)", c.name, c.format(c.new), c.format(c.old))})
		default:
			out = append(out, Change{Text: fmt.Sprintf("%s budget lowered to %s (was %s)", c.name, c.format(c.new), c.format(c.old))})
		}
	}
	return out
}
