package httpapi

import (
	"net/http"
	"net/http/pprof"

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
		addPprofRoutes(r)
	}
}

// addPprofRoutes serves net/http/pprof's profiles, but not its
// /debug/pprof/cmdline nor expvar's /debug/vars (chi's Profiler serves
// both): each shows the process's command line, and a port that shows the
// profiles must not hand out what an operator typed there. Any profile of
// the runtime (heap, goroutine, allocs, …) is served by name through the
// index.
func addPprofRoutes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(middleware.NoCache)
		r.Get("/debug/pprof", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/debug/pprof/", http.StatusMovedPermanently)
		})
		r.HandleFunc("/debug/pprof/*", pprof.Index)
		r.HandleFunc("/debug/pprof/cmdline", notFound)
		r.HandleFunc("/debug/pprof/profile", pprof.Profile)
		r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	})
}

// get routes GET and HEAD on pattern to h (net/http drops the body of a
// HEAD answer).
func get(r chi.Router, pattern string, h http.Handler) {
	r.Method(http.MethodGet, pattern, h)
	r.Method(http.MethodHead, pattern, h)
}
