package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Deps are what the HTTP surface reports on. Every field is optional: a nil
// check passes, a nil SessionsLive reports 0, a nil Now is time.Now, a zero
// Started is the time New was called, a nil Gatherer serves an empty
// exposition and a nil Logger discards.
type Deps struct {
	// Healthy reports whether the process can work: the database file is
	// writable. An error makes /healthz answer 503.
	Healthy func(context.Context) error
	// Ready reports whether the database answers. An error, or no answer
	// within checkTimeout, makes /readyz answer 503.
	Ready func(context.Context) error
	// SessionsLive returns the number of live agent sessions.
	SessionsLive func() int
	// Started is when the service started; uptime_ms counts from it.
	Started time.Time
	// Now is the clock.
	Now func() time.Time
	// Gatherer is what /metrics exposes.
	Gatherer prometheus.Gatherer
	// Logger receives panics, check failures and, at debug level, one line
	// per request.
	Logger *slog.Logger
	// Pprof serves the Go runtime's profiles under /debug/pprof/ (CPU,
	// heap, goroutines, ...). Off by default: a profile shows the
	// process's internals to whoever reaches the port.
	Pprof bool
	// Ingress, when set, adds the chat platform's HTTP ingress routes
	// (/slack/events, /slack/interactive, /slack/commands).
	Ingress func(chi.Router)
	// MetricsApart leaves /metrics and /debug/pprof/ out of New's routes:
	// NewMetrics serves them on a port of their own (AGENT_METRICS_PORT),
	// so that the port the chat platform reaches does not show them.
	MetricsApart bool
}

// checkTimeout bounds a health or readiness check. Probes (Kubernetes,
// Docker) time out after 1 to 10 s; a check that takes longer is failing
// anyway, and 2 s leaves the probe time to read the 503.
const checkTimeout = 2 * time.Second

// New returns the router serving the routes of routes.go.
func New(d Deps) http.Handler {
	d.defaults()
	r := newRouter(d.Logger)
	addRoutes(r, d)
	return r
}

// NewMetrics returns a router serving only /metrics (and /debug/pprof/
// with Pprof), with the same logging, panic recovery and 404s: the server
// of AGENT_METRICS_PORT when it is not the health port.
func NewMetrics(d Deps) http.Handler {
	d.defaults()
	r := newRouter(d.Logger)
	addMetricsRoutes(r, d)
	return r
}

func (d *Deps) defaults() {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Started.IsZero() {
		d.Started = d.Now()
	}
	if d.Gatherer == nil {
		d.Gatherer = prometheus.NewRegistry()
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
}

// newRouter is a router with the middleware and the 404 every server here
// shares.
func newRouter(log *slog.Logger) chi.Router {
	r := chi.NewRouter()
	r.Use(logRequests(log), recoverPanics(log))
	r.NotFound(notFound)
	return r
}

// NewIngress returns a router serving only the ingress routes, with the
// same logging, panic recovery and 404s: the server of AGENT_HTTP_PORT
// when it is not the health port.
func NewIngress(routes func(chi.Router), log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := newRouter(log)
	routes(r)
	return r
}
