package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/budget"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
)

// usageRecord is one channel, thread or person as `agent usage --json`
// prints it: the four token kinds, the tokens as budgets count them and
// the estimated cost.
type usageRecord struct {
	By         string   `json:"by"`  // channel, thread or person
	Key        string   `json:"key"` // its id (a thread: <channel>:<root ts>)
	Input      int64    `json:"input_tokens"`
	Output     int64    `json:"output_tokens"`
	CacheWrite int64    `json:"cache_write_tokens"`
	CacheRead  int64    `json:"cache_read_tokens"`
	Tokens     int64    `json:"budget_tokens"`
	CostUSD    float64  `json:"cost_usd"`
	Models     []string `json:"models"`
}

// usageCommand is `agent usage`: the model's tokens and their estimated
// cost by channel, thread or person.
func (c *cli) usageCommand() *ffcli.Command {
	by := store.UsageByChannel
	return c.command(command{
		name:  "usage",
		usage: "agent usage [--since 7d] [--by channel|thread|person] [--json]",
		help:  "the model's tokens by kind and their estimated cost, by channel, thread or person",
		longHelp: "Tokens are the provider's counts of each model call of a turn; BUDGET TOKENS counts them as the\n" +
			"budgets of SOUL.md do (cache reads at their price weight); the cost is estimated from the price\n" +
			"table of the known models, or AGENT_PRICES.",
		since: "model calls made within this `duration`",
		json:  "channel, thread or person",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&by, "by", by, "group by `channel`, thread or person")
		},
		run: func(ctx context.Context, inv *invocation, _ []string) error { return usage(ctx, inv, by) },
	})
}

func usage(ctx context.Context, inv *invocation, by string) error {
	if by != store.UsageByChannel && by != store.UsageByThread && by != store.UsageByPerson {
		return fmt.Errorf("--by: unknown grouping %q (want channel, thread or person)", by)
	}
	prices, err := budget.Load(inv.cfg.Prices, cmp.Or(inv.cfg.Model, llm.DefaultModel))
	if err != nil {
		return err
	}
	st, err := inv.openStore(ctx)
	if err != nil {
		return err
	}
	rows, err := st.UsageBy(ctx, inv.cutoff(), by)
	if err != nil {
		return err
	}
	records := usageRecords(rows, by, prices)
	if inv.json {
		return printJSON(inv.stdout, records)
	}
	if len(records) == 0 {
		_, err := fmt.Fprintf(inv.stdout, "no model calls in the last %s\n", inv.since)
		return err
	}
	w := newTable(inv.stdout, fmt.Sprintf("%s\tINPUT\tOUTPUT\tCACHE WRITE\tCACHE READ\tBUDGET TOKENS\tCOST (USD)", map[string]string{
		store.UsageByChannel: "CHANNEL", store.UsageByThread: "THREAD", store.UsageByPerson: "PERSON"}[by]))
	var total usageRecord
	for _, r := range records {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%.4f\n", orDash(r.Key), r.Input, r.Output, r.CacheWrite, r.CacheRead, r.Tokens, r.CostUSD)
		total.add(r)
	}
	fmt.Fprintf(w, "total\t%d\t%d\t%d\t%d\t%d\t%.4f\n", total.Input, total.Output, total.CacheWrite, total.CacheRead, total.Tokens, total.CostUSD)
	if err := w.Flush(); err != nil {
		return err
	}
	return usageBudgets(ctx, inv, st, prices)
}

// usageBudgets prints today's spend against each daily budget of SOUL.md
// (tokens or dollars); nothing when SOUL.md sets none or does not load:
// the usage above stands without it.
func usageBudgets(ctx context.Context, inv *invocation, st *store.Store, prices *budget.Prices) error {
	src, err := os.ReadFile(inv.soulPath(""))
	if err != nil {
		return nil
	}
	p, err := persona.Parse(inv.soulPath(""), src)
	if err != nil {
		return nil
	}
	if inv.cfg.Zone == nil {
		// The day ends at midnight in AGENT_TZ: its one parse.
		if err := inv.cfg.ValidateSettings(); err != nil {
			return err
		}
	}
	g := &budget.Guard{Store: st, Prices: prices, Budgets: p.Budgets, Zone: inv.cfg.Zone}
	today, err := g.Today(ctx, 20)
	if err != nil {
		return err
	}
	// Today's standings; a thread's budget counts the thread's whole
	// life, not today.
	lines := slices.DeleteFunc(today.Lines, func(l budget.Line) bool { return l.Budget == budget.Thread })
	if len(lines) == 0 {
		return nil
	}
	zone := "UTC"
	if inv.cfg.Zone != nil {
		zone = inv.cfg.Zone.String()
	}
	fmt.Fprintf(inv.stdout, "\nbudgets today (%s):\n", zone)
	for _, l := range lines {
		fmt.Fprintln(inv.stdout, "  "+l.String())
	}
	return nil
}

// usageRecords sums the rows (one per key and model) per key, the most
// costly first.
func usageRecords(rows []store.UsageRow, by string, prices *budget.Prices) []usageRecord {
	index := map[string]int{}
	var out []usageRecord
	for _, r := range rows {
		i, ok := index[r.Key]
		if !ok {
			i = len(out)
			index[r.Key] = i
			out = append(out, usageRecord{By: by, Key: r.Key, Models: []string{}})
		}
		out[i].add(usageRecord{Input: r.Input, Output: r.Output, CacheWrite: r.CacheWrite, CacheRead: r.CacheRead,
			Tokens: prices.Tokens(r.Model, r.Usage), CostUSD: prices.Cost(r.Model, r.Usage)})
		out[i].Models = append(out[i].Models, r.Model)
	}
	slices.SortStableFunc(out, func(a, b usageRecord) int {
		return cmp.Or(cmp.Compare(b.CostUSD, a.CostUSD), cmp.Compare(b.Tokens, a.Tokens), cmp.Compare(a.Key, b.Key))
	})
	return out
}

func (u *usageRecord) add(o usageRecord) {
	u.Input += o.Input
	u.Output += o.Output
	u.CacheWrite += o.CacheWrite
	u.CacheRead += o.CacheRead
	u.Tokens += o.Tokens
	u.CostUSD += o.CostUSD
}
