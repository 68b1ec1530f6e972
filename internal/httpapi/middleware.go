package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// logRequests logs one debug line per request: probes and scrapes arrive
// every few seconds and would drown the service's own lines at info.
func logRequests(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !log.Enabled(r.Context(), slog.LevelDebug) {
				next.ServeHTTP(w, r)
				return
			}
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			began := time.Now()
			defer func() {
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK
				}
				log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
					slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.Int("status", status), slog.Int("bytes", ww.BytesWritten()),
					slog.Duration("duration", time.Since(began)))
			}()
			next.ServeHTTP(ww, r)
		})
	}
}

// recoverPanics turns a panic in a handler (a Deps function, most likely)
// into a 500 and one error line with the stack. http.ErrAbortHandler is
// re-raised: it is net/http's way to abort a response on purpose.
func recoverPanics(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				log.LogAttrs(r.Context(), slog.LevelError, "http handler panicked",
					slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
				// The handlers write their answer in one go, at the end, so
				// nothing has been sent yet when one of them panics.
				writeJSON(w, http.StatusInternalServerError, health{Status: "error", Error: "internal error"})
			}()
			next.ServeHTTP(w, r)
		})
	}
}
