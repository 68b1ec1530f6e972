package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// addRoutes lists every route of the service. Each answers GET and HEAD
// (but the ingress's, which take the platform's POSTs); other methods get
// chi's 405 with an Allow header, unknown paths a JSON 404.
func addRoutes(r chi.Router, d Deps) {
	get(r, "/healthz", handleHealthz(d))
	get(r, "/readyz", handleReadyz(d))
	if !d.MetricsApart {
		addMetricsRoutes(r, d)
	}
	if d.Ingress != nil {
		d.Ingress(r)
	}
}

// addMetricsRoutes lists the routes that show the process's insides:
// served beside the health checks, or on a port of their own (NewMetrics).
func addMetricsRoutes(r chi.Router, d Deps) {
	get(r, "/metrics", handleMetrics(d))
	if d.Pprof {
		// chi's Profiler serves net/http/pprof's handlers under its mount.
		r.Mount("/debug", middleware.Profiler())
	}
}

// get routes GET and HEAD on pattern to h (net/http drops the body of a
// HEAD answer).
func get(r chi.Router, pattern string, h http.Handler) {
	r.Method(http.MethodGet, pattern, h)
	r.Method(http.MethodHead, pattern, h)
}
