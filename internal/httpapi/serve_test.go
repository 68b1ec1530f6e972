package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	var logs fake.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, New(deps()), slog.New(slog.NewJSONHandler(&logs, nil))) }()

	res, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"ok"`) {
		t.Errorf("GET /healthz: %d %s", res.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v, want nil after shutdown", err)
		}
	case <-time.After(shutdownTimeout + time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("listener still accepting after shutdown")
	}
	_, port, _ := net.SplitHostPort(addr)
	out := logs.String()
	for _, want := range []string{`"msg":"http listening"`, `"port":` + port, "/healthz", "/readyz", "/metrics"} {
		if !strings.Contains(out, want) {
			t.Errorf("listening line lacks %s: %s", want, out)
		}
	}
}

func TestServeListenerError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := Serve(context.Background(), ln, New(Deps{}), nil); err == nil {
		t.Error("Serve on a closed listener returned nil")
	}
}

func TestServeBadInput(t *testing.T) {
	if err := Serve(context.Background(), nil, New(Deps{}), nil); err == nil {
		t.Error("nil listener accepted")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := Serve(context.Background(), ln, nil, nil); err == nil {
		t.Error("nil handler accepted")
	}
}

// The listening line names what that server serves: a server of the
// metrics alone does not claim the health checks, nor the health port
// the metrics it left apart.
func TestEndpointsOfEachServer(t *testing.T) {
	d := deps()
	d.Pprof = true
	for _, tt := range []struct {
		name string
		h    http.Handler
		want string
	}{
		{"all", New(d), "/debug/pprof/ /healthz /metrics /readyz"},
		{"metrics apart", New(Deps{MetricsApart: true, Pprof: true}), "/healthz /readyz"},
		{"metrics alone", NewMetrics(d), "/debug/pprof/ /metrics"},
	} {
		if got := strings.Join(endpoints(tt.h), " "); got != tt.want {
			t.Errorf("%s: endpoints %q, want %q", tt.name, got, tt.want)
		}
	}
}
