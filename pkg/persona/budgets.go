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
	// ChannelUSD caps one channel's estimated spend per day, in US
	// dollars ("- Channel: $5/day"): the price table's estimate of the
	// tokens (internal/budget). It holds beside a token cap of the same
	// key; 0 is no cap.
	ChannelUSD float64 `json:"channelUSDPerDay,omitempty"`
	// PersonaUSD caps all the persona's estimated spend per day, in US
	// dollars ("- Persona: $50/day").
	PersonaUSD float64 `json:"personaUSDPerDay,omitempty"`
	// ScheduleUSD caps one scheduled run's estimated spend, in US dollars
	// ("- Schedule: $1/run"): the run stops at it.
	ScheduleUSD float64 `json:"scheduleUSDPerRun,omitempty"`
}

// Any reports whether a cap is set.
func (b Budgets) Any() bool {
	return b.Thread > 0 || b.Channel > 0 || b.Persona > 0 || b.Person > 0 ||
		b.ChannelUSD > 0 || b.PersonaUSD > 0 || b.ScheduleUSD > 0
}

// dollarKeys are the keys of "## Budgets" that take an amount in dollars:
// each with the period its value must end with.
var dollarKeys = map[string]struct {
	period string
	dst    func(*Budgets) *float64
}{
	"channel":  {"/day", func(b *Budgets) *float64 { return &b.ChannelUSD }},
	"persona":  {"/day", func(b *Budgets) *float64 { return &b.PersonaUSD }},
	"schedule": {"/run", func(b *Budgets) *float64 { return &b.ScheduleUSD }},
}

// FormatUSD writes an amount of US dollars as people read it: "$5.00",
// "$0.25", "$0.005" (cents, or as many digits as the amount has).
func FormatUSD(v float64) string {
	if c := v * 100; c == float64(int64(c)) {
		return fmt.Sprintf("$%.2f", v)
	}
	return "$" + strconv.FormatFloat(v, 'f', -1, 64)
}

// parseUSD reads a positive amount of dollars: "$5", "$0.50", "$1,000".
func parseUSD(s string) (float64, error) {
	num, ok := strings.CutPrefix(strings.TrimSpace(s), "$")
	if !ok {
		return 0, fmt.Errorf("not an amount in dollars: %q", s)
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(num), ",", ""), 64)
	if err != nil || f <= 0 || f > 1e9 {
		return 0, fmt.Errorf("not a positive amount in dollars: %q", s)
	}
	return f, nil
}

// dollars reads a "## Budgets" line whose value starts with "$"; it
// reports whether the line was one (read or warned about).
func (ps *parser) dollars(it item, k, v string) bool {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "$") {
		return false
	}
	key, known := dollarKeys[normKey(k)]
	if !known {
		ps.warn(it.line, "budget %q ignored: dollars are for \"- Channel: $N/day\", \"- Persona: $N/day\" and \"- Schedule: $N/run\"", it.text)
		return true
	}
	num, periodOK := strings.CutSuffix(v, key.period)
	n, err := parseUSD(num)
	if !periodOK || err != nil {
		ps.warn(it.line, "budget %q ignored: want \"%s: $N%s\" (N like 5 or 0.50)", it.text, k, key.period)
		return true
	}
	id := kindBudgets + "/" + normKey(k) + "/usd"
	if first, dup := ps.keys[id]; dup {
		ps.warn(it.line, "budget %q is given twice (first at line %d): using this one", k, first)
	}
	ps.keys[id] = it.line
	*key.dst(&ps.p.Budgets) = n
	return true
}

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
// "- Person: <N>/day" (or "<N> tokens/day"), N with an optional k or M;
// in dollars "- Channel: $N/day", "- Persona: $N/day", "- Schedule: $N/run"
// (dollars). A line it cannot read is a warning naming the line and
// sets nothing: a typo must not lift or tighten a cap silently.
func (ps *parser) budgets(s section) {
	const want = `want "- Thread: <N> tokens", "- Channel: <N> tokens/day", "- Persona: <N> tokens/day", "- Person: <N>/day", "- Channel: $N/day", "- Persona: $N/day" or "- Schedule: $N/run"`
	for _, it := range items(s.body, false) {
		k, v, ok := splitKV(it.text)
		if ok && ps.dollars(it, k, v) {
			continue
		}
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
	if b.ChannelUSD > 0 {
		parts = append(parts, "channel "+FormatUSD(b.ChannelUSD)+"/day")
	}
	if b.PersonaUSD > 0 {
		parts = append(parts, "persona "+FormatUSD(b.PersonaUSD)+"/day")
	}
	if b.ScheduleUSD > 0 {
		parts = append(parts, "schedule "+FormatUSD(b.ScheduleUSD)+"/run")
	}
	return "budgets: " + strings.Join(parts, ", ")
}
