package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/persona-runtime/agent/internal/fsutil"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
)

// seedSoul writes the starter SOUL.md scaffold under home when there is no
// SOUL.md yet. It reports whether it wrote one.
func seedSoul(home string) (bool, error) {
	path := filepath.Join(home, "SOUL.md")
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return false, fmt.Errorf("create home: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, persona.Scaffold(), 0o644); err != nil {
		return false, fmt.Errorf("seed SOUL.md: %w", err)
	}
	return true, nil
}

// loadPersona reads and parses SOUL.md, through the store's extraction
// cache keyed by the file's content hash and the parser's version. A
// persona that lacks required fields is an error.
func loadPersona(ctx context.Context, path string, st *store.Store, log *slog.Logger) (*persona.Persona, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read SOUL.md: %w", err)
	}
	key := "soul:" + persona.ParserVersion + ":" + persona.Hash(src)
	var p *persona.Persona
	if data, err := st.PersonaCache(ctx, key); err == nil {
		p = &persona.Persona{}
		if err := json.Unmarshal(data, p); err != nil || p.Prepare() != nil {
			p = nil // a bad cache entry is re-extracted below
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("persona cache: %w", err)
	}
	if p == nil {
		log.InfoContext(ctx, "soul cache miss", "path", path)
		if p, err = persona.Parse(path, src); err != nil {
			return nil, err
		}
		data, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode persona: %w", err)
		}
		if err := st.PutPersonaCache(ctx, key, data); err != nil {
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
