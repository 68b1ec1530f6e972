package commands

import (
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Who may run what (interfaces.md, "Doors"). A command that changes how the
// persona works for others, or reaches past the sender's own thread, needs
// a role; the sender's own turn and own thread are theirs to stop and lock.

// Refusals, said where the command was typed.
const (
	// msgModeRefused is pinned (interfaces.md).
	msgModeRefused       = "only the manager or an approver with scope mode can change the mode"
	msgAbortSlashRefused = "unauthorized: only the manager, the backup manager or an approver can stop every turn in this channel; " +
		"type `/abort` in your thread to stop your own turn."
	msgAbortRefused     = "unauthorized: only the person who started this turn, the manager, the backup manager or an approver can stop it."
	msgLockSlashRefused = "unauthorized: only the manager, the backup manager or an approver can lock the whole channel; " +
		"type `/1on1` in a thread you started to lock that thread."
	msgLockRefused         = "unauthorized: only the person who started this thread, the manager, the backup manager or an approver can lock it."
	msgCompactSlashRefused = "unauthorized: only the manager, the backup manager or an approver can compact this channel's conversation; " +
		"type `/compact` in a thread you started to compact that thread."
	msgCompactRefused = "unauthorized: only the person who started this thread, the manager, the backup manager or an approver can compact it."
)

// mayChangeMode is the manager, the backup manager, or an approver whose
// scopes are "anything" or name "mode": an approver for skills or Bash
// decides those cards, not how every later tool call of a thread is gated.
func mayChangeMode(a pipeline.Access) bool {
	return a.HasScope(persona.ScopeMode)
}

// mayChangeModel is the manager, the backup manager, or an approver whose
// scopes are "anything" or name "model" (pinned, interfaces.md): a model
// sets what every later turn of a thread or channel costs.
func mayChangeModel(a pipeline.Access) bool {
	return a.HasScope(persona.ScopeModel)
}

// rootAuthor reports whether the sender of a thread message posted the
// thread's root: the root itself, or a reply whose platform-given root
// author is the sender. An unknown root author is nobody's.
func rootAuthor(ev *pipeline.Event) bool {
	if ev.ThreadTS == "" || ev.ThreadTS == ev.TS {
		return true
	}
	return ev.UserID != "" && ev.ParentUserID == ev.UserID
}
