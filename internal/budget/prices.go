package budget

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/persona-runtime/agent/internal/store"
)

// Price is a model's list price in US dollars per million tokens of each
// kind.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheWrite float64 `json:"cache_write"`
	CacheRead  float64 `json:"cache_read"`
}

// Cost is the estimated cost of u in US dollars.
func (p Price) Cost(u store.Usage) float64 {
	return (float64(u.Input)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheWrite)*p.CacheWrite + float64(u.CacheRead)*p.CacheRead) / 1e6
}

// defaultCacheReadWeight is what a cache read token counts for against a
// budget when the model's prices are unknown: the providers' usual tenth.
const defaultCacheReadWeight = 0.1

// Prices is the price table: model id (or the start of one: a dated id
// like claude-sonnet-4-5-20250929 takes the price of claude-sonnet-4-5)
// to its price.
type Prices struct {
	byModel map[string]Price
	// Default is the service's model (AGENT_MODEL): budgets count in its
	// tokens, another model's weighed by their price against its price
	// (Tokens).
	Default string
}

// knownPrices are the list prices of the known models (USD per million
// tokens; cache writes are the 5-minute ones). AGENT_PRICES overrides
// them model by model.
var knownPrices = map[string]Price{
	"claude-opus-4":     {Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50},
	"claude-opus-4-0":   {Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50},
	"claude-opus-4-1":   {Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50},
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheWrite: 6.25, CacheRead: 0.50},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-sonnet-4-0": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-sonnet-4-5": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheWrite: 1.25, CacheRead: 0.10},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4, CacheWrite: 1, CacheRead: 0.08},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CacheWrite: 0.30, CacheRead: 0.03},
}

// DefaultPrices is the table of the known models.
func DefaultPrices() *Prices {
	p := &Prices{byModel: make(map[string]Price, len(knownPrices))}
	for k, v := range knownPrices {
		p.byModel[k] = v
	}
	return p
}

// Of is the price of model: its own, else the longest known id it starts
// with (followed by "-" or "@"); ok is false for a model the table does
// not know.
func (p *Prices) Of(model string) (Price, bool) {
	if pr, ok := p.byModel[model]; ok {
		return pr, true
	}
	best := ""
	for k := range p.byModel {
		if len(k) > len(best) && strings.HasPrefix(model, k) && strings.ContainsAny(model[len(k):len(k)+1], "-@") {
			best = k
		}
	}
	if best == "" {
		return Price{}, false
	}
	return p.byModel[best], true
}

// Cost is the estimated cost of u on model, 0 for a model without a price.
func (p *Prices) Cost(model string, u store.Usage) float64 {
	pr, _ := p.Of(model)
	return pr.Cost(u)
}

// Tokens is u as a budget counts it, in tokens of the default model:
// each kind of token weighs its price on model over the same kind's price
// on the default model (a model five times the price counts five tokens
// for one), and a cache read weighs, on top, the default model's cache
// read price over its input price (a tenth for the known models). On the
// default model that is input + output + cache writes + cache reads at
// their weight. A price either model lacks weighs one: a model without a
// price counts one for one, its cache reads at their own weight (or a
// tenth).
func (p *Prices) Tokens(model string, u store.Usage) int64 {
	own, ownOK := p.Of(model)
	base, baseOK := p.Of(p.Default)
	if !ownOK || !baseOK || base.Input <= 0 {
		w := defaultCacheReadWeight
		if ownOK && own.Input > 0 {
			w = own.CacheRead / own.Input
		}
		return u.Input + u.Output + u.CacheWrite + int64(float64(u.CacheRead)*w+0.5)
	}
	ratio := func(mine, theirs float64) float64 {
		if theirs <= 0 {
			return 1
		}
		return mine / theirs
	}
	f := float64(u.Input)*ratio(own.Input, base.Input) + float64(u.Output)*ratio(own.Output, base.Output) +
		float64(u.CacheWrite)*ratio(own.CacheWrite, base.CacheWrite) +
		float64(u.CacheRead)*base.CacheRead/base.Input*ratio(own.CacheRead, base.CacheRead)
	return int64(f + 0.5)
}

// Weighed reports whether Tokens weighs some model's tokens by price:
// the default model has a price and models holds another (AGENT_MODELS).
func (p *Prices) Weighed(models []string) bool {
	if _, ok := p.Of(p.Default); !ok {
		return false
	}
	for _, m := range models {
		if m != p.Default {
			return true
		}
	}
	return false
}

// Models lists the table's ids, sorted.
func (p *Prices) Models() []string {
	ids := make([]string, 0, len(p.byModel))
	for k := range p.byModel {
		ids = append(ids, k)
	}
	slices.Sort(ids)
	return ids
}

// Load is the price table of the service and of `agent usage`, the one
// loader of AGENT_PRICES: the file path over the known prices ("" : the
// known prices alone), budgets counting in tokens of the service's model
// (Default). An error names AGENT_PRICES.
func Load(path, service string) (*Prices, error) {
	prices := DefaultPrices()
	if path != "" {
		var err error
		if prices, err = LoadPrices(path); err != nil {
			return nil, fmt.Errorf("AGENT_PRICES: %w", err)
		}
	}
	prices.Default = service
	return prices, nil
}

// LoadPrices reads the AGENT_PRICES file over the known prices: a YAML
// map of model id to its four prices, per million tokens:
//
//	claude-sonnet-4-5:
//	  input: 3
//	  output: 15
//	  cache_write: 3.75
//	  cache_read: 0.30
//
// Every model it names needs all four, none negative. An error names the
// file and the line.
func LoadPrices(path string) (*Prices, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	return ParsePrices(path, src)
}

// ParsePrices is LoadPrices on src read from the file name.
func ParsePrices(name string, src []byte) (*Prices, error) {
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
	}
	p := DefaultPrices()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return p, nil // an empty file: the known prices
		}
		return nil, fmt.Errorf("%s: %w", name, err) // yaml's message carries the line
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, fail(root.Line, "want a map of model id to its prices")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		model := strings.TrimSpace(key.Value)
		if key.Kind != yaml.ScalarNode || model == "" {
			return nil, fail(key.Line, "want a model id")
		}
		if val.Kind != yaml.MappingNode {
			return nil, fail(val.Line, "model %s: want input, output, cache_write and cache_read prices (USD per million tokens)", model)
		}
		var pr Price
		seen := map[string]bool{}
		for j := 0; j+1 < len(val.Content); j += 2 {
			k, v := val.Content[j], val.Content[j+1]
			dst := map[string]*float64{"input": &pr.Input, "output": &pr.Output, "cache_write": &pr.CacheWrite, "cache_read": &pr.CacheRead}[k.Value]
			if dst == nil {
				return nil, fail(k.Line, "model %s: unknown price %q (want input, output, cache_write, cache_read)", model, k.Value)
			}
			var f float64
			if v.Kind != yaml.ScalarNode || v.Decode(&f) != nil || f < 0 {
				return nil, fail(v.Line, "model %s: %s must be a number of US dollars per million tokens, not %q", model, k.Value, v.Value)
			}
			*dst, seen[k.Value] = f, true
		}
		for _, need := range []string{"input", "output", "cache_write", "cache_read"} {
			if !seen[need] {
				return nil, fail(key.Line, "model %s: missing %s", model, need)
			}
		}
		p.byModel[model] = pr
	}
	return p, nil
}
