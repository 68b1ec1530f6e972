// Package httpapi is the service's HTTP surface: GET /healthz, /readyz and
// /metrics on a chi router, and Serve, which runs it until shutdown.
//
// The shapes are pinned by the service specification: /healthz answers
// {"status":"ok","uptime_ms":N,"sessions_live":N}, /readyz {"status":"ok"}
// or 503 when the database does not answer, /metrics the Prometheus text
// exposition. Every route is listed in routes.go.
package httpapi
