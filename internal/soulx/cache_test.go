package soulx_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/soulx"
	"github.com/persona-runtime/agent/pkg/persona"
)

// countingCache is a Cache that counts what Load asks of it.
type countingCache struct {
	soulx.Memory
	gets, puts int
	getErr     error
}

func (c *countingCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	c.gets++
	if c.getErr != nil {
		return nil, false, c.getErr
	}
	return c.Memory.Get(ctx, key)
}

func (c *countingCache) Put(ctx context.Context, key string, data []byte) error {
	c.puts++
	return c.Memory.Put(ctx, key, data)
}

// load runs soulx.Load on src and reports whether it missed the cache.
func load(t *testing.T, src string, c soulx.Cache, x *soulx.Extractor) (*persona.Persona, bool) {
	t.Helper()
	var logs bytes.Buffer
	p, err := soulx.Load(t.Context(), "SOUL.md", []byte(src), c, x, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return p, strings.Contains(logs.String(), "soul cache miss")
}

func TestLoadHitsTheCacheBySameKey(t *testing.T) {
	c := &countingCache{}
	first, missed := load(t, complete, c, nil)
	if !missed || c.puts != 1 {
		t.Fatalf("first load: missed %v, %d puts; want a miss and one put", missed, c.puts)
	}
	again, missed := load(t, complete, c, nil)
	if missed || c.puts != 1 || c.gets != 2 {
		t.Fatalf("second load: missed %v, %d puts, %d gets; want a hit", missed, c.puts, c.gets)
	}
	if again.Prompt() != first.Prompt() || again.Manager != first.Manager {
		t.Errorf("the cached persona differs:\n%s\n---\n%s", again.Prompt(), first.Prompt())
	}
	if again.RoleOf("U0ALICE") != first.RoleOf("U0ALICE") {
		t.Error("the cached persona is not prepared")
	}
	if _, ok, _ := c.Memory.Get(t.Context(), (*soulx.Extractor)(nil).CacheKey([]byte(complete))); !ok {
		t.Error("the entry is not under CacheKey(src)")
	}
}

func TestLoadMissesOnAChangedSoul(t *testing.T) {
	c := &countingCache{}
	load(t, complete, c, nil)
	changed := strings.Replace(complete, "- Name: Ada", "- Name: Grace", 1)
	p, missed := load(t, changed, c, nil)
	if !missed || c.puts != 2 || p.Identity.Name != "Grace" {
		t.Fatalf("changed SOUL.md: missed %v, %d puts, name %q; want a miss and the new name", missed, c.puts, p.Identity.Name)
	}
	if _, missed := load(t, complete, c, nil); missed {
		t.Error("the first version's entry was lost")
	}
}

func TestCacheKey(t *testing.T) {
	src := []byte(complete)
	var off *soulx.Extractor
	a, b := soulx.WithModel(nil, "model-a"), soulx.WithModel(nil, "model-b")
	if off.CacheKey(src) != off.CacheKey(append([]byte(nil), src...)) || a.CacheKey(src) != soulx.WithModel(nil, "model-a").CacheKey(src) {
		t.Error("the key is not a function of its inputs")
	}
	keys := map[string]bool{off.CacheKey(src): true, a.CacheKey(src): true, b.CacheKey(src): true, off.CacheKey(append(src, '\n')): true}
	if len(keys) != 4 {
		t.Errorf("keys collide: %v", keys)
	}
	if k := a.CacheKey(src); !strings.HasPrefix(k, "soul:"+persona.ParserVersion+":x"+soulx.Version+":model-a:") || !strings.HasSuffix(k, persona.Hash(src)) {
		t.Errorf("key %q lacks the parser's version, the extraction's, the model or the hash", k)
	}
}

// TestLoadCachesTheExtraction: the model is asked once for a SOUL.md; the
// next load takes its answer from the cache.
func TestLoadCachesTheExtraction(t *testing.T) {
	f, m := newModel(t)
	f.Enqueue(fake.TextReply(`{"manager": {"userId": "U0ALICE"}}`))
	c, x := &countingCache{}, soulx.WithModel(m, "claude-haiku-4-5")
	for i := range 2 {
		p, missed := load(t, proseManager, c, x)
		if p.Manager.UserID != "U0ALICE" || missed != (i == 0) {
			t.Fatalf("load %d: manager %q, missed %v", i, p.Manager.UserID, missed)
		}
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
	// Without extraction the same file is another entry, and misses.
	if _, err := soulx.Load(t.Context(), "SOUL.md", []byte(proseManager), c, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "manager.userId") {
		t.Fatalf("without extraction: err %v, want manager.userId missing", err)
	}
}

func TestLoadReplacesABadEntry(t *testing.T) {
	c := &countingCache{}
	if err := c.Memory.Put(t.Context(), (*soulx.Extractor)(nil).CacheKey([]byte(complete)), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	p, missed := load(t, complete, c, nil)
	if !missed || c.puts != 1 || p.Identity.Name != "Ada" {
		t.Fatalf("missed %v, %d puts, name %q; want the entry re-parsed and replaced", missed, c.puts, p.Identity.Name)
	}
	if _, missed := load(t, complete, c, nil); missed {
		t.Error("the replaced entry does not hit")
	}
}

func TestLoadErrors(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	broken := errors.New("disk on fire")
	if _, err := soulx.Load(t.Context(), "SOUL.md", []byte(complete), &countingCache{getErr: broken}, nil, log); !errors.Is(err, broken) {
		t.Errorf("cache failure: err %v", err)
	}
	if _, err := soulx.Load(t.Context(), filepath.Join(t.TempDir(), "SOUL.md"), nil, &countingCache{}, nil, log); err == nil || !strings.Contains(err.Error(), "read SOUL.md") {
		t.Errorf("no file: err %v", err)
	}
	missing := strings.Replace(complete, "## Mandate\n- Own the release checklist.\n", "", 1)
	if _, err := soulx.Load(t.Context(), "SOUL.md", []byte(missing), &countingCache{}, nil, log); err == nil || !strings.Contains(err.Error(), "missing required fields: mandate") {
		t.Errorf("no mandate: err %v", err)
	}
}

func TestLoadReadsThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "SOUL.md")
	if err := os.WriteFile(path, []byte(complete), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &countingCache{}
	p, err := soulx.Load(t.Context(), path, nil, c, nil, slog.New(slog.DiscardHandler))
	if err != nil || p.Identity.Name != "Ada" {
		t.Fatalf("persona %v, err %v", p, err)
	}
	if _, ok, _ := c.Memory.Get(t.Context(), (*soulx.Extractor)(nil).CacheKey([]byte(complete))); !ok {
		t.Error("the file's content is not what was keyed")
	}
}

func TestShared(t *testing.T) {
	if soulx.Shared() != soulx.Shared() {
		t.Fatal("Shared is not one cache")
	}
	var m soulx.Memory
	if _, ok, err := m.Get(t.Context(), "k"); ok || err != nil {
		t.Fatalf("empty cache: ok %v, err %v", ok, err)
	}
	if err := m.Put(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if data, ok, _ := m.Get(t.Context(), "k"); !ok || string(data) != "v" {
		t.Fatalf("got %q, %v", data, ok)
	}
}
