package soulx

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/persona-runtime/agent/pkg/persona"
)

// Cache keeps parsed personas, encoded, by CacheKey: the store's
// persona_cache across boots, or Memory within a process. Get reports
// ok false when key has no entry; an error is a failure to read.
type Cache interface {
	Get(ctx context.Context, key string) (data []byte, ok bool, err error)
	Put(ctx context.Context, key string, data []byte) error
}

// Memory is a Cache in this process's memory.
type Memory struct{ m sync.Map }

// Get returns the entry under key.
func (c *Memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	data, ok := c.m.Load(key)
	if !ok {
		return nil, false, nil
	}
	return data.([]byte), true, nil
}

// Put keeps data under key.
func (c *Memory) Put(_ context.Context, key string, data []byte) error {
	c.m.Store(key, data)
	return nil
}

// shared is Shared's cache.
var shared Memory

// Shared is the process's own persona cache, for the simulator's in-memory
// stores: the scenarios of one run share a handful of souls and their
// databases are new, so a store's cache would miss every time.
func Shared() *Memory { return &shared }

// Load reads SOUL.md at path (unless src holds it already) and parses it,
// through cache: on a hit the persona is decoded from the cache, on a miss
// (logged as "soul cache miss") persona.Parse and x's extraction run and the
// result is put in the cache. An entry that does not decode is treated as a
// miss and replaced. A persona that lacks required fields is an error; its
// warnings are logged.
func Load(ctx context.Context, path string, src []byte, cache Cache, x *Extractor, log *slog.Logger) (*persona.Persona, error) {
	var err error
	if src == nil {
		if src, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read SOUL.md: %w", err)
		}
	}
	key := x.CacheKey(src)
	var p *persona.Persona
	data, ok, err := cache.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("persona cache: %w", err)
	}
	if ok {
		p = &persona.Persona{}
		if err := json.Unmarshal(data, p); err != nil || p.Prepare() != nil {
			p = nil // a bad cache entry is re-extracted below
		}
	}
	if p == nil {
		log.InfoContext(ctx, "soul cache miss", "path", path)
		if p, err = persona.Parse(path, src); err != nil {
			return nil, err
		}
		if p, err = x.Extract(ctx, src, p, log, path); err != nil {
			return nil, err
		}
		data, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode persona: %w", err)
		}
		if err := cache.Put(ctx, key, data); err != nil {
			return nil, fmt.Errorf("persona cache: %w", err)
		}
	}
	if missing := p.Missing(); len(missing) > 0 {
		return nil, fmt.Errorf("%s: missing required fields: %s", path, strings.Join(missing, ", "))
	}
	for _, w := range p.WarningLines() {
		log.WarnContext(ctx, "SOUL.md warning", "path", path, "warning", w)
	}
	return p, nil
}
