package sim

import (
	"fmt"
	"strings"
)

// The ids of the sim world (interfaces.md).
const (
	Manager  = "U0MGR"
	Backup   = "U0BACKUP"
	Approver = "U0APP"
	Member   = "U0ALICE"
	Outsider = "U0BOB"

	TrustedChannel    = "C0TEAM"
	AllowedChannel    = "C0PUB"
	RestrictedChannel = "C0RANDOM"
	DMChannel         = "D0SIM"
)

// World is the persona every scenario starts from.
type World struct {
	Name      string
	Manager   string
	Backup    string
	Approvers []string // "U0APP: anything"
	Trusted   []string
	Allowed   []string
	Blocked   []string
	Redaction []string // "regex ; description"
	Mandate   string
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
		Mandate:   "Helps the team in the simulator: answers questions, asks before deploys.",
	}
}

// Merge applies a scenario's soul overrides, key by key, each key replacing
// the world's value.
func (w World) Merge(o *SoulOverride) World {
	if o == nil {
		return w
	}
	if o.Manager != nil {
		w.Manager = *o.Manager
	}
	if o.Backup != nil {
		w.Backup = *o.Backup
	}
	if o.Approvers != nil {
		w.Approvers = *o.Approvers
	}
	if o.Trusted != nil {
		w.Trusted = *o.Trusted
	}
	if o.Allowed != nil {
		w.Allowed = *o.Allowed
	}
	if o.Blocked != nil {
		w.Blocked = *o.Blocked
	}
	if o.Redaction != nil {
		w.Redaction = *o.Redaction
	}
	if o.Mandate != nil {
		w.Mandate = *o.Mandate
	}
	return w
}

// SoulMD renders the world as a SOUL.md for the real parser.
func (w World) SoulMD() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Persona\n\n## Identity\n- Name: %s\n- Role: simulated teammate\n- Voice: brief\n\n", w.Name)
	fmt.Fprintf(&b, "## Reporting\n- Manager: %s\n", w.Manager)
	if w.Backup != "" {
		fmt.Fprintf(&b, "- Backup manager: %s\n", w.Backup)
	}
	fmt.Fprintf(&b, "\n## Mandate\n%s\n", w.Mandate)
	list := func(title string, items []string, format func(string) string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n", title)
		for _, it := range items {
			fmt.Fprintf(&b, "- %s\n", format(strings.TrimSpace(it)))
		}
	}
	channel := func(id string) string { return "<#" + id + ">" }
	list("Trusted channels", w.Trusted, channel)
	list("Allowed channels", w.Allowed, channel)
	list("Approvers", w.Approvers, func(a string) string {
		id, scopes, ok := strings.Cut(a, ":")
		if !ok {
			return a
		}
		return "<@" + strings.TrimSpace(id) + ">: " + strings.TrimSpace(scopes)
	})
	list("Blocked", w.Blocked, func(u string) string { return "<@" + u + ">" })
	list("Redaction", w.Redaction, func(r string) string { return r })
	return []byte(b.String())
}

// RoleUser is the user id of a role, or the id itself when as is one.
func RoleUser(as string) (string, bool) {
	switch as {
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
	if len(as) > 1 && (as[0] == 'U' || as[0] == 'W') && strings.ToUpper(as) == as {
		return as, true
	}
	return "", false
}

// LayerChannel is the sim world's channel of a trust layer.
func LayerChannel(layer string) string {
	switch layer {
	case "trusted":
		return TrustedChannel
	case "allowed":
		return AllowedChannel
	case "restricted":
		return RestrictedChannel
	}
	return DMChannel
}
