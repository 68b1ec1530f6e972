package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// health is the body of /healthz and /readyz. uptime_ms and sessions_live
// are on every /healthz answer, 503 included (interfaces.md: /healthz
// always carries them), and never on /readyz.
type health struct {
	Status       string `json:"status"`
	Error        string `json:"error,omitempty"`
	UptimeMS     *int64 `json:"uptime_ms,omitempty"`
	SessionsLive *int   `json:"sessions_live,omitempty"`
}

// maxReason bounds the error text of a 503: enough for "database is
// locked" or a path, short enough for a probe's log.
const maxReason = 200

func handleHealthz(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uptime := max(d.Now().Sub(d.Started).Milliseconds(), 0)
		live := 0
		if d.SessionsLive != nil {
			live = max(d.SessionsLive(), 0)
		}
		body := health{Status: "ok", UptimeMS: &uptime, SessionsLive: &live}
		if err := check(r.Context(), d.Healthy); err != nil {
			d.Logger.LogAttrs(r.Context(), slog.LevelWarn, "health check failed", slog.Any("err", err))
			body.Status, body.Error = "error", reason(err)
			writeJSON(w, http.StatusServiceUnavailable, body)
			return
		}
		writeJSON(w, http.StatusOK, body)
	})
}

func handleReadyz(d Deps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := check(r.Context(), d.Ready); err != nil {
			d.Logger.LogAttrs(r.Context(), slog.LevelWarn, "readiness check failed", slog.Any("err", err))
			writeJSON(w, http.StatusServiceUnavailable, health{Status: "unavailable", Error: reason(err)})
			return
		}
		writeJSON(w, http.StatusOK, health{Status: "ok"})
	})
}

func handleMetrics(d Deps) http.Handler {
	return promhttp.HandlerFor(d.Gatherer, promhttp.HandlerOpts{
		// A broken collector is a 500 the scraper records as a failed
		// scrape, rather than a partial exposition that hides series.
		ErrorHandling: promhttp.HTTPErrorOnError,
		ErrorLog:      promLogger{d.Logger},
		// Scrapes are cheap but the process collector reads /proc: a
		// handful at once is plenty for one or two scrapers.
		MaxRequestsInFlight: 4,
	})
}

// check runs fn with checkTimeout; a nil fn passes.
func check(ctx context.Context, fn func(context.Context) error) error {
	if fn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	return fn(ctx)
}

// reason is the short form of err shown in a 503 body.
func reason(err error) string {
	s := err.Error()
	if len(s) <= maxReason {
		return s
	}
	i := maxReason
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusNotFound, health{Status: "not_found"})
}

// writeJSON writes v as the JSON body of a status answer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// The bodies are fixed structs of strings and integers.
		http.Error(w, "encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// promLogger adapts the logger to promhttp.Logger.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("metrics exposition failed", "err", fmt.Sprint(v...))
}
