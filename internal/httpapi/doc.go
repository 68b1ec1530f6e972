// Package httpapi is the service's HTTP surface: GET /healthz, /readyz and
// /metrics (with /debug/pprof/ when asked) on a chi router — or the metrics
// and profiles on a server of their own (AGENT_METRICS_PORT), and the HTTP
// ingress's routes beside the health ones — and Serve, which runs a router
// until shutdown.
//
// The shapes are pinned by the service specification: /healthz answers
// {"status":"ok","uptime_ms":N,"sessions_live":N}, /readyz {"status":"ok"}
// or 503 when the database does not answer, /metrics the Prometheus text
// exposition. Every route is listed in routes.go.
package httpapi
