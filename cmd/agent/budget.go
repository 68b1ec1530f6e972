package main

import (
	"cmp"
	"fmt"
	"time"

	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/budget"
	"github.com/persona-runtime/agent/pkg/clock"
)

// newBudget builds the guard that records each model call's tokens and
// holds turns to SOUL.md's "## Budgets": prices from AGENT_PRICES over the
// known ones, days ending at midnight in AGENT_TZ (UTC without it) on the
// service's clock, the raise card through the approval gate.
func (s *service) newBudget(gate *approval.Gate) (*budget.Guard, error) {
	prices := budget.DefaultPrices()
	if s.cfg.Prices != "" {
		var err error
		if prices, err = budget.LoadPrices(s.cfg.Prices); err != nil {
			return nil, fmt.Errorf("AGENT_PRICES: %w", err)
		}
	}
	zone := time.UTC
	if s.cfg.TZ != "" {
		var err error
		if zone, err = time.LoadLocation(s.cfg.TZ); err != nil {
			return nil, fmt.Errorf("AGENT_TZ: %w", err)
		}
	}
	s.clock = cmp.Or[clock.Clock](s.clock, clock.System)
	g := &budget.Guard{Store: s.store, Prices: prices, Budgets: s.persona.Budgets, Zone: zone, Now: s.clock.Now,
		Gate: gate, Exhausted: s.metrics.BudgetExhausted, Cost: s.metrics.LLMCost, Log: s.log}
	return g, g.Check()
}
