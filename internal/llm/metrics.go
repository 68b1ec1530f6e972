package llm

import (
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the instruments Send updates. Whoever registers metrics creates
// them; a nil *Metrics, or a nil field, records nothing.
type Metrics struct {
	// Requests counts calls of Send by label "outcome": ok, unavailable,
	// auth, invalid_request, context_too_long, canceled or error. A call
	// counts once, however many attempts it took.
	Requests *prometheus.CounterVec
	// Tokens counts the tokens of successful calls by labels "kind" (input,
	// output, cache_read or cache_write) and "model" (as the provider
	// names it in its answer, else the model asked).
	Tokens *prometheus.CounterVec
	// Duration observes the seconds each call of Send took, retries included.
	Duration prometheus.Observer
}

// observe records one call that ended with err after seconds, using usage
// when it succeeded.
func (m *Metrics) observe(err error, seconds float64, usage *anthropic.Usage, model string) {
	if m == nil {
		return
	}
	if m.Requests != nil {
		m.Requests.WithLabelValues(outcome(err)).Inc()
	}
	if m.Duration != nil {
		m.Duration.Observe(seconds)
	}
	if m.Tokens != nil && usage != nil {
		// Counters panic on negative additions; the counts come from the wire.
		m.Tokens.WithLabelValues("input", model).Add(float64(max(usage.InputTokens, 0)))
		m.Tokens.WithLabelValues("output", model).Add(float64(max(usage.OutputTokens, 0)))
		m.Tokens.WithLabelValues("cache_read", model).Add(float64(max(usage.CacheReadInputTokens, 0)))
		m.Tokens.WithLabelValues("cache_write", model).Add(float64(max(usage.CacheCreationInputTokens, 0)))
	}
}

// validate reports a counter vector whose labels are not the ones observe
// uses, which would make WithLabelValues panic later.
func (m *Metrics) validate() error {
	if m == nil {
		return nil
	}
	if m.Requests != nil {
		if _, err := m.Requests.GetMetricWithLabelValues("ok"); err != nil {
			return fmt.Errorf("llm metrics: requests must have the one label outcome: %w", err)
		}
	}
	if m.Tokens != nil {
		if _, err := m.Tokens.GetMetricWithLabelValues("input", "model"); err != nil {
			return fmt.Errorf("llm metrics: tokens must have the labels kind and model: %w", err)
		}
	}
	return nil
}
