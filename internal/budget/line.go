package budget

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Line is one budget's standing today, as `agent usage` and the App Home
// show it: what it has spent against its limit (with today's raises), in
// tokens or, for a dollar budget, in dollars.
type Line struct {
	// Budget is Persona, Channel, Person or Thread; Holder the channel's
	// or the person's id ("" for the persona, and for a thread's budget,
	// which counts a thread's whole life: its Limit only).
	Budget, Holder string
	// Used and Limit are tokens, or micro-dollars when USD is set (see
	// UsedUSD and LimitUSD).
	Used, Limit int64
	USD         bool
}

// UsedUSD is a dollar budget's spend in dollars.
func (l Line) UsedUSD() float64 { return float64(l.Used) / microUSD }

// LimitUSD is a dollar budget's limit in dollars.
func (l Line) LimitUSD() float64 { return float64(l.Limit) / microUSD }

// String writes the line as people read it: "channel <#C1>: $3.20 of $5.00
// today", "persona: 12000 of 100000 tokens today".
func (l Line) String() string {
	who := l.Budget
	switch {
	case l.Budget == Thread:
		return fmt.Sprintf("thread: %d tokens a thread", l.Limit)
	case l.Budget == Channel && l.Holder != "":
		who += " <#" + l.Holder + ">"
	case l.Holder != "":
		who += " <@" + l.Holder + ">"
	}
	if l.USD {
		return fmt.Sprintf("%s: %s of %s today", who, formatMicro(l.Used), formatMicro(l.Limit))
	}
	return fmt.Sprintf("%s: %d of %d tokens today", who, l.Used, l.Limit)
}

// daily are the persona's and the channels' daily budgets today (the
// day of the zone, on the guard's clock), computed as the guard enforces
// them: the persona's, then each channel's that has spent today, tokens
// before dollars; none when SOUL.md sets none.
func (g *Guard) daily(ctx context.Context) ([]Line, error) {
	now := g.now().In(g.zone())
	day, midnight := now.Format(time.DateOnly), startOfDay(now)
	var channels []string
	if g.Budgets.Channel > 0 || g.Budgets.ChannelUSD > 0 {
		rows, err := g.Store.UsageBy(ctx, midnight, store.UsageByChannel)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if r.Key != "" && !slices.Contains(channels, r.Key) {
				channels = append(channels, r.Key)
			}
		}
		slices.Sort(channels)
	}
	type want struct {
		s standing
		f store.UsageFilter
	}
	var wants []want
	add := func(name, holder, channel string, tokens int64, usd float64) {
		f := store.UsageFilter{ChannelID: channel, Since: midnight}
		if tokens > 0 {
			wants = append(wants, want{standing{budget: name, day: day, base: tokens, holder: holder}, f})
		}
		if cap := toMicro(usd); cap > 0 {
			wants = append(wants, want{standing{budget: name, day: day, base: cap, holder: holder, usd: true}, f})
		}
	}
	add(Persona, "", "", g.Budgets.Persona, g.Budgets.PersonaUSD)
	for _, c := range channels {
		add(Channel, pipeline.ThreadKey(c, ""), c, g.Budgets.Channel, g.Budgets.ChannelUSD)
	}
	out := make([]Line, 0, len(wants))
	for _, w := range wants {
		s, err := g.standing(ctx, w.s, w.f)
		if err != nil {
			return nil, err
		}
		out = append(out, Line{Budget: s.budget, Holder: channelOf(s.holder), Used: s.used, Limit: s.limit, USD: s.usd})
	}
	return out, nil
}
