package approval

import (
	"context"

	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/pkg/persona"
)

// AskMemory asks the card a persona-wide memory waits on (memory.Cards):
// MemoryCards over the gate.
func (g *Gate) AskMemory(ctx context.Context, r memory.CardRequest) (memory.CardOutcome, error) {
	return MemoryCards{Asker: g}.AskMemory(ctx, r)
}

// MemoryCards is memory's cards (memory.Cards) over an asker (*Gate): a
// card of category memory showing the memory's whole text, its digest
// that text's. Memory states its request in its own types since the store
// imports memory and this package imports the store.
type MemoryCards struct {
	Asker interface {
		Ask(ctx context.Context, r Request) (Outcome, error)
	}
}

var _ memory.Cards = (*Gate)(nil)

// AskMemory asks r's card and waits for its outcome.
func (c MemoryCards) AskMemory(ctx context.Context, r memory.CardRequest) (memory.CardOutcome, error) {
	out, err := c.Asker.Ask(ctx, Request{
		ThreadKey:   r.ThreadKey,
		ChannelID:   r.ChannelID,
		ThreadTS:    r.ThreadTS,
		RequestedBy: r.RequestedBy,
		Category:    persona.CategoryMemory,
		Summary:     r.Summary,
		Digest:      Digest(persona.CategoryMemory, []byte(r.Summary)),
	})
	if err != nil {
		return memory.CardOutcome{}, err
	}
	return memory.CardOutcome{Approved: out.Approved(), By: out.By, ID: out.ID, State: out.State, Text: out.Text()}, nil
}
