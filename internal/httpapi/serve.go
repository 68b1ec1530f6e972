package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// Server timeouts. The answers are small and computed in memory or by a
// check bounded by checkTimeout; the limits only keep slow or idle clients
// from holding connections (ReadHeaderTimeout guards against Slowloris).
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 120 * time.Second
	// shutdownTimeout bounds the graceful shutdown: in-flight probes finish
	// within checkTimeout, and container runtimes send SIGKILL 10 s after
	// SIGTERM by default.
	shutdownTimeout = 5 * time.Second
)

// endpoints are the paths h serves, sorted, as the startup line names
// them: its routes when it is a router of this package, the profiles as
// one.
func endpoints(h http.Handler) []string {
	routes, ok := h.(chi.Routes)
	if !ok {
		return []string{"/healthz", "/readyz", "/metrics"}
	}
	var out []string
	seen := map[string]bool{}
	_ = chi.Walk(routes, func(_, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/debug/") {
			route = "/debug/pprof/"
		}
		if !seen[route] {
			seen[route] = true
			out = append(out, route)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// Serve serves h on ln until ctx is done, then shuts down gracefully,
// giving in-flight requests a few seconds. It logs the listening line (with
// the address, the port and the endpoints) once it is accepting. It
// returns nil after a clean shutdown and closes ln in every case.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	if ln == nil {
		return errors.New("http serve: nil listener")
	}
	if h == nil {
		_ = ln.Close()
		return errors.New("http serve: nil handler")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	attrs := []any{"addr", ln.Addr().String(), "endpoints", endpoints(h)}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		attrs = append(attrs, "port", tcp.Port)
	}
	log.InfoContext(ctx, "http listening", attrs...)

	select {
	case err := <-served:
		return fmt.Errorf("http serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		<-served
		return fmt.Errorf("http shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http serve: %w", err)
	}
	return nil
}
