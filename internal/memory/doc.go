// Package memory is memory across threads: what may be remembered, by
// whom, where it may be recalled, and its three faces — the model's tools
// (remember, recall, forget), the thread commands' texts (/memory,
// /forget) and the operator's export. What is stored, and the visibility
// rule inside the search itself, are internal/store's (memory.go,
// recall.go).
package memory
