package service

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
// known ones, tokens counted in those of the service's model (models[0];
// the others, AGENT_MODELS, weighed by price), days ending at midnight in
// AGENT_TZ (UTC without it) on the service's clock, the raise card through
// the approval gate.
func (s *Service) newBudget(gate *approval.Gate, models []string) (*budget.Guard, error) {
	prices, err := LoadPrices(s.cfg.Prices, models[0])
	if err != nil {
		return nil, err
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
		Gate: gate, Weighed: prices.Weighed(models), Exhausted: s.metrics.BudgetExhausted, Cost: s.metrics.LLMCost, Log: s.log}
	return g, g.Check()
}

// LoadPrices is the price table: AGENT_PRICES (path) over the known
// prices, budgets counting in tokens of the service's model.
func LoadPrices(path, service string) (*budget.Prices, error) {
	prices := budget.DefaultPrices()
	if path != "" {
		var err error
		if prices, err = budget.LoadPrices(path); err != nil {
			return nil, fmt.Errorf("AGENT_PRICES: %w", err)
		}
	}
	prices.Default = service
	return prices, nil
}
