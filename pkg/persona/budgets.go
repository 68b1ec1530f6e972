package persona

import (
	"fmt"
	"strconv"
	"strings"
)

// Budgets are the token caps of "## Budgets" (interfaces.md, "Budgets and
// controls"); 0 is no cap. Tokens are counted as input + output + cache
// writes, cache reads at their price weight (internal/budget).
type Budgets struct {
	// Thread caps one thread's tokens over its whole life.
	Thread int64 `json:"thread,omitempty"`
	// Channel caps one channel's tokens per day.
	Channel int64 `json:"channelPerDay,omitempty"`
	// Persona caps all the persona's tokens per day.
	Persona int64 `json:"personaPerDay,omitempty"`
	// Person caps the tokens of the turns one person sends (a scheduled
	// run: its creator) per day, across every thread: one member cannot
	// spend the persona's day.
	Person int64 `json:"personPerDay,omitempty"`
}

// Any reports whether a cap is set.
func (b Budgets) Any() bool { return b.Thread > 0 || b.Channel > 0 || b.Persona > 0 || b.Person > 0 }

// budgetKeys are the keys of "## Budgets": each with the units its value
// may end with (tried in order) and the form an error names.
var budgetKeys = map[string]struct {
	units []string
	want  string
	dst   func(*Budgets) *int64
}{
	"thread":  {[]string{"tokens"}, "<N> tokens", func(b *Budgets) *int64 { return &b.Thread }},
	"channel": {[]string{"tokens/day"}, "<N> tokens/day", func(b *Budgets) *int64 { return &b.Channel }},
	"persona": {[]string{"tokens/day"}, "<N> tokens/day", func(b *Budgets) *int64 { return &b.Persona }},
	"person":  {[]string{"tokens/day", "/day"}, "<N>/day", func(b *Budgets) *int64 { return &b.Person }},
}

// budgets reads "## Budgets": bullets "- Thread: <N> tokens",
// "- Channel: <N> tokens/day", "- Persona: <N> tokens/day",
// "- Person: <N>/day" (or "<N> tokens/day"), N with an optional k or M. A line it cannot read is a warning naming the line and
// sets nothing: a typo must not lift or tighten a cap silently.
func (ps *parser) budgets(s section) {
	const want = `want "- Thread: <N> tokens", "- Channel: <N> tokens/day", "- Persona: <N> tokens/day" or "- Person: <N>/day"`
	for _, it := range items(s.body, false) {
		k, v, ok := splitKV(it.text)
		key, known := budgetKeys[normKey(k)]
		if !ok || !known {
			ps.warn(it.line, "line in \"## Budgets\" ignored: %s", want)
			continue
		}
		var num string
		unitOK := false
		for _, u := range key.units {
			if num, unitOK = strings.CutSuffix(strings.TrimSpace(v), u); unitOK {
				break
			}
		}
		n, err := parseTokens(strings.TrimSpace(num))
		if !unitOK || err != nil {
			ps.warn(it.line, "budget %q ignored: want \"%s: %s\" (N like 50000, 200k or 1.5M)", it.text, k, key.want)
			continue
		}
		id := kindBudgets + "/" + normKey(k)
		if first, dup := ps.keys[id]; dup {
			ps.warn(it.line, "budget %q is given twice (first at line %d): using this one", k, first)
		}
		ps.keys[id] = it.line
		*key.dst(&ps.p.Budgets) = n
	}
}

// parseTokens reads a positive token count, with an optional k (thousand)
// or M (million) suffix.
func parseTokens(s string) (int64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 64)
	if err != nil || f <= 0 || f*mult > 1e15 {
		return 0, fmt.Errorf("not a positive token count: %q", s)
	}
	return int64(f * mult), nil
}

// budgetSummary is validate-soul's line about the budgets.
func (b Budgets) summary() string {
	if !b.Any() {
		return "budgets: none"
	}
	var parts []string
	if b.Thread > 0 {
		parts = append(parts, fmt.Sprintf("thread %d tokens", b.Thread))
	}
	if b.Channel > 0 {
		parts = append(parts, fmt.Sprintf("channel %d tokens/day", b.Channel))
	}
	if b.Persona > 0 {
		parts = append(parts, fmt.Sprintf("persona %d tokens/day", b.Persona))
	}
	if b.Person > 0 {
		parts = append(parts, fmt.Sprintf("person %d tokens/day", b.Person))
	}
	return "budgets: " + strings.Join(parts, ", ")
}
