package service

import (
	"cmp"

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
	prices, err := budget.Load(s.cfg.Prices, models[0])
	if err != nil {
		return nil, err
	}
	s.clock = cmp.Or[clock.Clock](s.clock, clock.System)
	g := &budget.Guard{Store: s.store, Prices: prices, Budgets: s.persona.Budgets, Zone: s.cfg.Zone, Now: s.clock.Now,
		Gate: gate, Weighed: prices.Weighed(models), Exhausted: s.metrics.BudgetExhausted, Cost: s.metrics.LLMCost, Log: s.log}
	return g, g.Check()
}
