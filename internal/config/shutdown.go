package config

import (
	"fmt"
	"time"
)

// DefaultShutdownGrace is AGENT_SHUTDOWN_GRACE's default. compose.yaml's
// stop_grace_period and the Kubernetes manifests'
// terminationGracePeriodSeconds are set above it: the process needs a few
// seconds more after the grace to close the store.
const DefaultShutdownGrace = 30 * time.Second

// DefaultOrderSettle is AGENT_ORDER_SETTLE's default: the platform's skew
// between two deliveries of a replayed backlog (a millisecond) plus the
// other replica's one-row insert (a few ms on a healthy Postgres), with
// room for a busy host. Only a message arriving in an idle thread, with
// replicas, waits it.
const DefaultOrderSettle = 100 * time.Millisecond

// DefaultMetricsPortApart is where /metrics and /debug/pprof/ go when the
// HTTP ingress shares the health port and AGENT_METRICS_PORT is unset.
const DefaultMetricsPortApart = 9090

// MetricsListenPort is the port of /metrics and /debug/pprof/:
// AGENT_METRICS_PORT when set; else the health port, but when the HTTP
// ingress shares the health port, DefaultMetricsPortApart, so that the
// port the chat platform reaches serves only /slack/*, /healthz and
// /readyz. 0 (the health port disabled, no AGENT_METRICS_PORT) serves them
// nowhere.
func (c *Config) MetricsListenPort() int {
	switch {
	case c.MetricsPort != 0:
		return c.MetricsPort
	case c.HTTPIngress() && c.IngressPort() == c.HealthPort && c.HealthPort != 0:
		return DefaultMetricsPortApart
	}
	return c.HealthPort
}

// validateShutdownAndMetrics checks AGENT_SHUTDOWN_GRACE,
// AGENT_ORDER_SETTLE and AGENT_METRICS_PORT.
func (c *Config) validateShutdownAndMetrics() error {
	switch {
	case c.ShutdownGrace <= 0:
		return fmt.Errorf("AGENT_SHUTDOWN_GRACE: must be above 0, got %v", c.ShutdownGrace)
	case c.OrderSettle < 0 || c.OrderSettle > 10*time.Second:
		return fmt.Errorf("AGENT_ORDER_SETTLE: must be between 0 and 10s, got %v", c.OrderSettle)
	case c.MetricsPort < 0 || c.MetricsPort > 65535:
		return fmt.Errorf("AGENT_METRICS_PORT: %d is not a port", c.MetricsPort)
	}
	return nil
}
