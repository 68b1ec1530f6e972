package budget

import (
	"context"
	"sort"
	"time"

	"github.com/persona-runtime/agent/internal/store"
)

// Today is the persona's spend since midnight (in Zone) against its
// budgets, as the manager's App Home shows it (internal/home).
type Today struct {
	// Tokens are today's tokens (input, output and cache, as counted);
	// Cost their estimated cost in dollars (the price table).
	Tokens int64
	Cost   float64
	// Lines are each budget line of "## Budgets" with what it holds
	// today, the largest holders of per-channel and per-person lines.
	Lines []Line
}

// Today reads today's spend and each budget's standing: the persona's and
// the channels' as the guard enforces them (standings, tokens and
// dollars), at most max people's per-person lines (the largest), and the
// thread's limit.
func (g *Guard) Today(ctx context.Context, max int) (Today, error) {
	now := g.now().In(g.zone())
	midnight := startOfDay(now)
	day := midnight.Format(time.DateOnly)
	var t Today
	rows, err := g.Store.UsageOf(ctx, store.UsageFilter{Since: midnight})
	if err != nil {
		return t, err
	}
	for _, r := range rows {
		t.Tokens += r.Input + r.Output + r.CacheRead + r.CacheWrite
		t.Cost += g.Prices.Cost(r.Model, r.Usage)
	}
	lines, err := g.daily(ctx)
	if err != nil {
		return t, err
	}
	t.Lines = lines
	for _, per := range []struct {
		name, by string
		limit    int64
	}{{Person, store.UsageByPerson, g.Budgets.Person}} {
		if per.limit <= 0 {
			continue
		}
		rows, err := g.Store.UsageBy(ctx, midnight, per.by)
		if err != nil {
			return t, err
		}
		used := map[string]int64{}
		for _, r := range rows {
			if r.Key != "" {
				used[r.Key] += g.Prices.Tokens(r.Model, r.Usage)
			}
		}
		keys := make([]string, 0, len(used))
		for k := range used {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if used[keys[i]] != used[keys[j]] {
				return used[keys[i]] > used[keys[j]]
			}
			return keys[i] < keys[j]
		})
		if len(keys) == 0 {
			t.Lines = append(t.Lines, Line{Budget: per.name, Limit: per.limit})
		}
		for _, k := range keys[:min(len(keys), max)] {
			raised, err := g.Store.BudgetRaised(ctx, k, per.name, day)
			if err != nil {
				return t, err
			}
			t.Lines = append(t.Lines, Line{Budget: per.name, Holder: k, Used: used[k], Limit: per.limit + raised})
		}
	}
	if b := g.Budgets.Thread; b > 0 {
		t.Lines = append(t.Lines, Line{Budget: Thread, Limit: b})
	}
	return t, nil
}
