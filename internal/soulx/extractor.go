package soulx

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/pkg/persona"
)

// Extractor fills what the parser could not find, with a model
// (AGENT_SOUL_EXTRACT=model). A nil *Extractor is extraction off.
type Extractor struct {
	model Model
	name  string // the model id, part of the cache key
}

// NewExtractor returns the extractor cfg asks for: with cfg.SoulModel when
// cfg.SoulExtract is "model", else nil (no model is called at boot).
func NewExtractor(cfg *config.Config, log *slog.Logger, tracer trace.Tracer, m *llm.Metrics) (*Extractor, error) {
	if cfg.SoulExtract != "model" {
		return nil, nil
	}
	client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.SoulModel}, log, tracer, m)
	if err != nil {
		return nil, fmt.Errorf("soul extraction model: %w", err)
	}
	return WithModel(client, client.Model()), nil
}

// WithModel returns an extractor that asks m, naming the model name (in
// the request and in the cache key).
func WithModel(m Model, name string) *Extractor { return &Extractor{model: m, name: name} }

// Extract runs the extraction (see the package's Extract) on p, parsed
// from src at path, and logs one line per field it filled. A nil extractor
// returns p unchanged.
func (x *Extractor) Extract(ctx context.Context, src []byte, p *persona.Persona, log *slog.Logger, path string) (*persona.Persona, error) {
	if x == nil {
		return p, nil
	}
	out, notes, err := Extract(ctx, x.model, x.name, src, p)
	if err != nil {
		return nil, fmt.Errorf("%s: model extraction: %w", path, err)
	}
	for _, n := range notes {
		log.InfoContext(ctx, "soul extraction", "path", path, "note", n)
	}
	return out, nil
}

// CacheKey is the persona cache's key for src: the parser's version, the
// extraction's and its model (when on), and the file's content hash. A
// change to any of them misses the cache.
func (x *Extractor) CacheKey(src []byte) string {
	key := "soul:" + persona.ParserVersion
	if x != nil {
		key += ":x" + Version + ":" + x.name
	}
	return key + ":" + persona.Hash(src)
}
