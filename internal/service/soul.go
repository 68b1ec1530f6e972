package service

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
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/soulx"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/fsutil"
	"github.com/persona-runtime/agent/pkg/persona"
)

// SeedSoul writes the starter SOUL.md scaffold under home when there is no
// SOUL.md yet. It reports whether it wrote one.
func SeedSoul(home string) (bool, error) {
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

// extractor fills what the parser could not find (AGENT_SOUL_EXTRACT=model).
type Extractor struct {
	model soulx.Model
	name  string // the model id
}

// extract runs the opt-in model extraction; a nil extractor changes nothing.
func (x *Extractor) Extract(ctx context.Context, src []byte, p *persona.Persona, log *slog.Logger, path string) (*persona.Persona, error) {
	if x == nil {
		return p, nil
	}
	out, notes, err := soulx.Extract(ctx, x.model, x.name, src, p)
	if err != nil {
		return nil, fmt.Errorf("%s: model extraction: %w", path, err)
	}
	for _, n := range notes {
		log.InfoContext(ctx, "soul extraction", "path", path, "note", n)
	}
	return out, nil
}

// cacheKey keys the persona cache: the parser's version, the extraction's
// (when on) and the file's content hash.
func (x *Extractor) cacheKey(src []byte) string {
	key := "soul:" + persona.ParserVersion
	if x != nil {
		key += ":x" + soulx.Version + ":" + x.name
	}
	return key + ":" + persona.Hash(src)
}

// parsedSouls holds, for the simulator's in-memory stores, the encoded
// persona of each SOUL.md parsed in this process (cache key → JSON): the
// scenarios of one run share a handful of souls, and their databases are
// new, so the store's cache would miss every time.
var parsedSouls sync.Map

// loadPersona reads and parses SOUL.md, through the store's extraction
// cache keyed by the file's content hash and the parser's (and extraction's)
// version. A persona that lacks required fields is an error.
func loadPersona(ctx context.Context, path string, src []byte, st *store.Store, x *Extractor, log *slog.Logger) (*persona.Persona, error) {
	var err error
	if src == nil {
		if src, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read SOUL.md: %w", err)
		}
	}
	key := x.cacheKey(src)
	memory := st.Path() == store.InMemory // a simulator scenario's: new, and one of many
	var p *persona.Persona
	if data, ok := parsedSouls.Load(key); memory && ok {
		p = &persona.Persona{}
		if err := json.Unmarshal(data.([]byte), p); err != nil || p.Prepare() != nil {
			p = nil
		}
	} else if data, err := st.PersonaCache(ctx, key); err == nil {
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
		if p, err = x.Extract(ctx, src, p, log, path); err != nil {
			return nil, err
		}
		data, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode persona: %w", err)
		}
		if memory {
			parsedSouls.Store(key, data)
		} else if err := st.PutPersonaCache(ctx, key, data); err != nil {
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

// NewExtractor returns the SOUL.md model extractor when
// AGENT_SOUL_EXTRACT=model, else nil (no model is called at boot).
func NewExtractor(cfg *config.Config, log *slog.Logger, tracer trace.Tracer, m *llm.Metrics) (*Extractor, error) {
	if cfg.SoulExtract != "model" {
		return nil, nil
	}
	client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.SoulModel}, log, tracer, m)
	if err != nil {
		return nil, fmt.Errorf("soul extraction model: %w", err)
	}
	return &Extractor{model: client, name: client.Model()}, nil
}

// redactPatterns are the persona's redaction patterns, compiled.
func redactPatterns(p *persona.Persona) ([]redact.Pattern, error) {
	res, err := p.Compile()
	if err != nil {
		return nil, err
	}
	out := make([]redact.Pattern, 0, len(res))
	for i, re := range res {
		out = append(out, redact.Pattern{Re: re, Description: p.Redactions[i].Description})
	}
	return out, nil
}
