// Package metrics declares every Prometheus instrument of the service on a
// registry of its own, so that tests and several instances in one process
// never collide on the global registry.
//
// Names follow the Prometheus conventions: the agent_ prefix, _total on
// counters, _seconds on duration histograms. agent_sessions_live and
// agent_chat_drops_total{reason} are pinned by the service specification;
// the rest are this package's choice. Label values that are known up front
// (every drop reason, every token kind) are created at zero by New, so that
// the series exist from the first scrape and rate() sees their first
// increment.
package metrics
