package service

import (
	"context"
	"errors"

	"github.com/persona-runtime/agent/internal/soulx"
	"github.com/persona-runtime/agent/internal/store"
)

// personaCache is soulx's persona cache in st (its persona_cache table), or
// the process's own for the simulator's in-memory stores (soulx.Shared).
func personaCache(st *store.Store) soulx.Cache {
	if st.Path() == store.InMemory { // a simulator scenario's: new, and one of many
		return soulx.Shared()
	}
	return storedSouls{st}
}

// storedSouls is the store's persona_cache as a soulx.Cache.
type storedSouls struct{ st *store.Store }

func (c storedSouls) Get(ctx context.Context, key string) ([]byte, bool, error) {
	data, err := c.st.PersonaCache(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return data, err == nil, err
}

func (c storedSouls) Put(ctx context.Context, key string, data []byte) error {
	return c.st.PutPersonaCache(ctx, key, data)
}
