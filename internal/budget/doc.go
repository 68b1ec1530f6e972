// Package budget is what the persona's model calls cost and how far they
// may go: the price table (prices.go) that turns tokens into an estimated
// cost and weighs cache reads, and the guard (guard.go) that records each
// call's tokens and holds a thread, a channel or the persona to the
// "## Budgets" of SOUL.md (interfaces.md, "Budgets and controls").
package budget
