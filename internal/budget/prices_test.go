package budget

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/store"
)

func TestPricesKnownAndDated(t *testing.T) {
	p := DefaultPrices()
	u := store.Usage{Input: 1_000_000, Output: 1_000_000, CacheWrite: 1_000_000, CacheRead: 1_000_000}
	if got := p.Cost("claude-sonnet-4-5-20250929", u); got != 3+15+3.75+0.30 {
		t.Errorf("dated sonnet cost = %v", got)
	}
	if got := p.Cost("claude-opus-4-5", u); got != 5+25+6.25+0.5 {
		t.Errorf("opus 4.5 took another price: %v", got)
	}
	if _, ok := p.Of("claude-opus-45"); ok {
		t.Error("a prefix without a separator matched")
	}
	if got := p.Cost("mystery", u); got != 0 {
		t.Errorf("unknown model cost = %v", got)
	}
	// Cache reads weigh their price over the input's: a tenth here.
	if got := p.Tokens("claude-haiku-4-5", store.Usage{Input: 10, Output: 20, CacheWrite: 30, CacheRead: 1000}); got != 160 {
		t.Errorf("weighted tokens = %d, want 160", got)
	}
}

func TestLoadPrices(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		path := filepath.Join(dir, "prices.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p, err := LoadPrices(write("claude-test:\n  input: 2\n  output: 4\n  cache_write: 2.5\n  cache_read: 0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pr, ok := p.Of("claude-test"); !ok || pr != (Price{2, 4, 2.5, 0.5}) {
		t.Errorf("claude-test = %+v %v", pr, ok)
	}
	if _, ok := p.Of("claude-sonnet-4-5"); !ok {
		t.Error("the file dropped the known prices")
	}
	for _, c := range []struct{ text, want string }{
		{"m:\n  input: 1\n  output: x\n  cache_write: 1\n  cache_read: 1\n", ":3: model m: output must be a number"},
		{"m:\n  input: 1\n  output: 1\n  cache_write: 1\n", ":1: model m: missing cache_read"},
		{"m:\n  input: 1\n  ouput: 1\n", `:3: model m: unknown price "ouput"`},
		{"m:\n  input: -1\n  output: 1\n  cache_write: 1\n  cache_read: 1\n", ":2: model m: input must be"},
		{"- m\n", ":1: want a map"},
		{"m: [\n", "line"},
		{"m: 3\n", ":1: model m: want input"},
	} {
		_, err := LoadPrices(write(c.text))
		if err == nil || !strings.Contains(err.Error(), "prices.yaml") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want the file and %q", c.text, err, c.want)
		}
	}
	if _, err := LoadPrices(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// TestLoad: the one loader of AGENT_PRICES gives the known prices without
// a file, the file over them with one, counts in the service's model, and
// names AGENT_PRICES in its error.
func TestLoad(t *testing.T) {
	p, err := Load("", "claude-sonnet-4-5")
	if err != nil || p.Default != "claude-sonnet-4-5" {
		t.Fatalf("Load without a file = %+v, %v", p, err)
	}
	if _, ok := p.Of("claude-sonnet-4-5"); !ok {
		t.Error("no file: the known prices are missing")
	}
	path := filepath.Join(t.TempDir(), "prices.yaml")
	if err := os.WriteFile(path, []byte("claude-test:\n  input: 2\n  output: 4\n  cache_write: 2.5\n  cache_read: 0.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err = Load(path, "claude-test"); err != nil || p.Default != "claude-test" {
		t.Fatalf("Load(%s) = %+v, %v", path, p, err)
	}
	if pr, ok := p.Of("claude-test"); !ok || pr != (Price{2, 4, 2.5, 0.5}) {
		t.Errorf("claude-test = %+v %v", pr, ok)
	}
	if _, err := Load(path+".missing", "m"); err == nil || !strings.HasPrefix(err.Error(), "AGENT_PRICES: ") {
		t.Errorf("a missing file: %v, want an error naming AGENT_PRICES", err)
	}
}

// Each kind of token weighs its price over the default model's price of
// the same kind; cache reads weigh, on top, the default's cache read
// price over its input price. Without a default (or a price) the old
// count holds.
func TestTokensWeighedAgainstTheDefaultModel(t *testing.T) {
	p := DefaultPrices()
	p.Default = "claude-sonnet-4-5"
	u := store.Usage{Input: 1000, Output: 100, CacheWrite: 10, CacheRead: 10_000}
	for model, want := range map[string]int64{
		"claude-sonnet-4-5":          1000 + 100 + 10 + 1000, // the default: cache reads a tenth
		"claude-sonnet-4-5-20250929": 2110,                   // the same price
		"claude-opus-4-1":            5 * 2110,               // five times every price
		"claude-haiku-4-5":           703,                    // a third of every price
		"mystery":                    1000 + 100 + 10 + 1000, // no price: one for one, reads a tenth
	} {
		if got := p.Tokens(model, u); got != want {
			t.Errorf("%s: %d tokens, want %d", model, got, want)
		}
	}
	if !p.Weighed([]string{"claude-sonnet-4-5", "claude-opus-4-1"}) || p.Weighed([]string{"claude-sonnet-4-5"}) {
		t.Error("Weighed: wrong for the model lists")
	}
	p.Default = "claude-test" // a default without a price weighs nothing
	if got := p.Tokens("claude-opus-4-1", u); got != 2110 || p.Weighed([]string{"claude-test", "claude-opus-4-1"}) {
		t.Errorf("unpriced default: opus counts %d, want 2110", got)
	}
}
