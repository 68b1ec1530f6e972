package persona

import (
	"fmt"
	"strings"
)

// Summary is the human-readable account of the persona that validate-soul
// prints on success: name, role, managers, channel lists, approvers and
// their scopes, who may DM it, its suggested prompts, redaction and blocked counts,
// approval timeout and channel overrides. Warnings are not included (see WarningLines).
func (p *Persona) Summary() string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	line("name: %s", orNone(p.Identity.Name, "(missing)"))
	if p.Identity.Role != "" {
		line("role: %s", p.Identity.Role)
	}
	line("manager: %s", orNone(person(p.Manager), "(missing)"))
	line("backup manager: %s", orNone(person(p.BackupManager), "none"))
	line("trusted channels%s", channelList(p.Trusted))
	line("allowed channels%s", channelList(p.Allowed))
	if p.DMOpen() {
		line("direct messages: anyone in the workspace (both channel lists are empty)")
	} else {
		line("direct messages: the manager and the backup manager only")
	}
	if len(p.Approvers) == 0 {
		line("approvers: none")
	} else {
		parts := make([]string, len(p.Approvers))
		for i, a := range p.Approvers {
			parts[i] = "<@" + a.UserID + "> (" + strings.Join(a.Scopes, ", ") + ")"
		}
		line("approvers (%d): %s", len(parts), strings.Join(parts, ", "))
	}
	if len(p.SuggestedPrompts) == 0 {
		line("suggested prompts: none")
	} else {
		quoted := make([]string, len(p.SuggestedPrompts))
		for i, q := range p.SuggestedPrompts {
			quoted[i] = fmt.Sprintf("%q", q)
		}
		line("suggested prompts (%d): %s", len(quoted), strings.Join(quoted, ", "))
	}
	line("redaction patterns: %d", len(p.Redactions))
	line("blocked users: %d", len(p.Blocked))
	if len(p.Peers) == 0 {
		line("peers: none")
	} else {
		parts := make([]string, len(p.Peers))
		for i, id := range p.Peers {
			parts[i] = "<@" + id + ">"
		}
		line("peers (%d): %s", len(parts), strings.Join(parts, ", "))
	}
	if p.ApprovalTimeoutSeconds == 0 {
		line("approval timeout: none (waits forever)")
	} else {
		line("approval timeout: %ds", p.ApprovalTimeoutSeconds)
	}
	line("%s", p.Budgets.summary())
	if len(p.Channels) == 0 {
		line("channel overrides: none")
	} else {
		parts := make([]string, 0, len(p.Channels))
		for _, id := range sortedKeys(p.Channels) {
			o := p.Channels[id]
			s := ChannelRef{ID: o.ID, Name: o.Name}.String()
			if o.Mode != "" {
				s += " (mode " + string(o.Mode) + ")"
			}
			parts = append(parts, s)
		}
		line("channel overrides (%d): %s", len(parts), strings.Join(parts, ", "))
	}
	line("%s", networkSummary(p.Network))
	return b.String()
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func channelList(refs []ChannelRef) string {
	if len(refs) == 0 {
		return ": none"
	}
	parts := make([]string, len(refs))
	for i, c := range refs {
		parts[i] = c.String()
	}
	return fmt.Sprintf(" (%d): %s", len(refs), strings.Join(parts, ", "))
}
