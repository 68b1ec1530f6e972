package memory

import (
	"context"
	"fmt"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// CardPrefix opens the text of the card a persona-wide memory the model
// asks for waits on (interfaces.md, "Walls"); the whole memory follows it.
const CardPrefix = "Remember for every conversation: "

// msgNotEverywhere opens what the model is told when the card did not
// make the memory; the card's outcome follows.
const msgNotEverywhere = "not remembered: "

// rememberAsked is the model's remember in turn t. A conversation memory
// is stored at once. A persona-wide one reaches every conversation, the
// most public included, so the model alone never makes it, in any
// permission mode: it is stored only once the manager or the backup
// manager approves a card of category memory showing its whole text
// (CardPrefix) — an approver's click does not decide it (persona.CanApprove),
// and the decider's role is checked again here. decided is the card's
// outcome ("" without one). A refusal, a denial and a timeout are Refusals:
// nothing is stored.
func (m *Memories) rememberAsked(ctx context.Context, t *pipeline.Turn, who Who, text, scope string) (mem Memory, decided string, err error) {
	channel, threadTS := t.Event.ChannelID, t.Event.RootTS()
	text, scope, err = m.check(ctx, who, channel, text, scope)
	if err != nil {
		return Memory{}, "", err
	}
	if scope != ScopePersona {
		mem, err = m.add(ctx, who, channel, threadTS, text, scope)
		return mem, "", err
	}
	if m.Cards == nil {
		return Memory{}, "", Refusal(msgNoCard)
	}
	summary := CardPrefix + text
	out, err := m.Cards.AskMemory(ctx, CardRequest{
		ThreadKey:   t.Event.ThreadKey(),
		ChannelID:   channel,
		ThreadTS:    threadTS,
		RequestedBy: t.Event.UserID,
		Summary:     summary,
	})
	if err != nil {
		return Memory{}, "", fmt.Errorf("persona-wide memory card: %w", err)
	}
	if !out.Approved {
		m.Log.InfoContext(ctx, "persona memory not approved", "approval_id", out.ID, "outcome", out.State, "user_id", who.UserID)
		return Memory{}, "", Refusal(msgNotEverywhere + out.Text)
	}
	if by := (Who{UserID: out.By, Role: m.roleOf(out.By)}); !by.managing() {
		m.Log.WarnContext(ctx, "persona memory approved by someone not managing", "approval_id", out.ID, "decided_by", out.By)
		return Memory{}, "", Refusal(msgNotEverywhere + out.Text + ", who is neither the manager nor the backup manager")
	}
	mem, err = m.add(ctx, who, channel, threadTS, text, scope)
	if err != nil {
		return Memory{}, "", err
	}
	m.Log.InfoContext(ctx, "persona memory approved", "approval_id", out.ID, "memory", mem.ID, "decided_by", out.By)
	return mem, out.Text, nil
}

// roleOf is what userID is to the persona (RoleOf; member without it).
func (m *Memories) roleOf(userID string) pipeline.Role {
	if m.RoleOf == nil || userID == "" {
		return pipeline.RoleMember
	}
	return m.RoleOf(userID)
}
