// Package memory is memory across threads: what a memory is (Memory) and
// the rule every one passes (Check), what may be remembered, by whom,
// where it may be recalled, and its three faces — the model's tools
// (remember, recall, forget), the thread commands' texts (/memory,
// /forget) and the operator's export. The store keeps the memories and
// runs the search, the visibility rule inside it included
// (internal/store, memory.go and recall.go): it imports this package's
// types and calls Check; this package reaches it through Store and never
// imports it.
package memory
