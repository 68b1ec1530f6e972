// Package approval is the approval gate: it posts approval cards in a
// thread, waits for an authorised click (or the timeout), records every
// request and decision in the store's append-only audit, and updates the
// card with the outcome. The tool gate (ToolGate) applies the permission
// modes to each tool call and asks through the gate when a call needs a card.
package approval
