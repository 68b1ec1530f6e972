// Package approval is the approval gate: it posts approval cards in a
// thread, waits for an authorised click (or the timeout), records every
// request and decision in the store's append-only audit, and updates the
// card with the outcome. The tool gate (ToolGate) applies the permission
// modes to each tool call and asks through the gate when a call needs a card;
// the card shows the call whole, in a notation that makes every invisible or
// misleading character visible (visible.go), and a call too long for a card
// goes with it as a file (render.go).
package approval
