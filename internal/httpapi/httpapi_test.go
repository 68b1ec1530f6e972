package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/persona-runtime/agent/internal/metrics"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// deps returns Deps that pass every check, with a fixed clock 1.5 s after
// the start and 3 live sessions.
func deps() Deps {
	m := metrics.New()
	m.SessionsLive.Set(3)
	return Deps{
		Healthy:      func(context.Context) error { return nil },
		Ready:        func(context.Context) error { return nil },
		SessionsLive: func() int { return 3 },
		Started:      t0,
		Now:          func() time.Time { return t0.Add(1500 * time.Millisecond) },
		Gatherer:     m.Registry,
	}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, h http.Handler, method, path string) answer {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{res.StatusCode, res.Header, string(b)}
}

// decode returns the JSON object of a and its keys, sorted.
func decode(t *testing.T, a answer) (map[string]any, []string) {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	dec := json.NewDecoder(strings.NewReader(a.body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %q: %v", a.body, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return m, keys
}

func TestHealthz(t *testing.T) {
	a := do(t, New(deps()), http.MethodGet, "/healthz")
	if a.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", a.status, a.body)
	}
	m, keys := decode(t, a)
	if got := strings.Join(keys, ","); got != "sessions_live,status,uptime_ms" {
		t.Errorf("keys %s, want exactly status, uptime_ms, sessions_live", got)
	}
	if m["status"] != "ok" || m["uptime_ms"] != json.Number("1500") || m["sessions_live"] != json.Number("3") {
		t.Errorf("body %s", a.body)
	}
}

func TestHealthzDefaults(t *testing.T) {
	a := do(t, New(Deps{}), http.MethodGet, "/healthz")
	m, _ := decode(t, a)
	if a.status != http.StatusOK || m["status"] != "ok" || m["sessions_live"] != json.Number("0") {
		t.Errorf("zero Deps: %d %s", a.status, a.body)
	}
}

func TestChecksFail(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		set      func(d *Deps, fn func(context.Context) error)
		wantBody map[string]string
		wantKeys string
	}{
		{
			name:     "healthz unwritable database",
			path:     "/healthz",
			set:      func(d *Deps, fn func(context.Context) error) { d.Healthy = fn },
			wantBody: map[string]string{"status": "error", "error": "db file not writable"},
			wantKeys: "error,sessions_live,status,uptime_ms",
		},
		{
			name:     "readyz database down",
			path:     "/readyz",
			set:      func(d *Deps, fn func(context.Context) error) { d.Ready = fn },
			wantBody: map[string]string{"status": "unavailable", "error": "db file not writable"},
			wantKeys: "error,status",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deps()
			var logs bytes.Buffer
			d.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			tt.set(&d, func(context.Context) error { return errors.New("db file not writable") })
			a := do(t, New(d), http.MethodGet, tt.path)
			if a.status != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503", a.status)
			}
			m, keys := decode(t, a)
			if got := strings.Join(keys, ","); got != tt.wantKeys {
				t.Errorf("keys %s, want %s", got, tt.wantKeys)
			}
			for k, v := range tt.wantBody {
				if m[k] != v {
					t.Errorf("%s = %v, want %q", k, m[k], v)
				}
			}
			if !strings.Contains(logs.String(), "db file not writable") {
				t.Errorf("failure not logged: %q", logs.String())
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	a := do(t, New(deps()), http.MethodGet, "/readyz")
	m, keys := decode(t, a)
	if a.status != http.StatusOK || m["status"] != "ok" || len(keys) != 1 {
		t.Errorf("got %d %s, want 200 {\"status\":\"ok\"}", a.status, a.body)
	}
}

func TestReadyzTimeout(t *testing.T) {
	d := deps()
	var deadline time.Duration
	d.Ready = func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		if !ok {
			return errors.New("no deadline")
		}
		deadline = time.Until(dl)
		return ctx.Err()
	}
	a := do(t, New(d), http.MethodGet, "/readyz")
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if deadline <= 0 || deadline > checkTimeout {
		t.Errorf("check deadline in %v, want within %v", deadline, checkTimeout)
	}
}

func TestMetrics(t *testing.T) {
	a := do(t, New(deps()), http.MethodGet, "/metrics")
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ct)
	}
	for _, want := range []string{
		"\nagent_sessions_live 3\n",
		"\nagent_chat_drops_total{reason=\"whitelist\"} 0\n",
		"# TYPE agent_chat_drops_total counter\n",
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}

type failingCollector struct{ desc *prometheus.Desc }

func (c failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, errors.New("broken"))
}

func TestMetricsGatherError(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(failingCollector{prometheus.NewDesc("agent_broken", "Broken.", nil, nil)})
	d := deps()
	d.Gatherer = reg
	if a := do(t, New(d), http.MethodGet, "/metrics"); a.status != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", a.status)
	}
}

func TestRouting(t *testing.T) {
	tests := []struct {
		method, path string
		want         int
	}{
		{http.MethodHead, "/healthz", http.StatusOK},
		{http.MethodHead, "/readyz", http.StatusOK},
		{http.MethodHead, "/metrics", http.StatusOK},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/metrics", http.StatusMethodNotAllowed},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/healthz/extra", http.StatusNotFound},
		{http.MethodPost, "/nope", http.StatusNotFound},
	}
	h := New(deps())
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			a := do(t, h, tt.method, tt.path)
			if a.status != tt.want {
				t.Fatalf("status %d, want %d", a.status, tt.want)
			}
			switch tt.want {
			case http.StatusMethodNotAllowed:
				if allow := strings.Join(a.header.Values("Allow"), ","); !strings.Contains(allow, "GET") || !strings.Contains(allow, "HEAD") {
					t.Errorf("Allow %q, want GET and HEAD", allow)
				}
			case http.StatusNotFound:
				if m, _ := decode(t, a); m["status"] != "not_found" {
					t.Errorf("body %s", a.body)
				}
			case http.StatusOK:
				if a.body != "" {
					t.Errorf("HEAD answer has a body: %q", a.body)
				}
			}
		})
	}
}

func TestRecoverPanics(t *testing.T) {
	d := deps()
	var logs bytes.Buffer
	d.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d.SessionsLive = func() int { panic("sessions exploded") }
	a := do(t, New(d), http.MethodGet, "/healthz")
	if a.status != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", a.status)
	}
	if m, _ := decode(t, a); m["status"] != "error" {
		t.Errorf("body %s", a.body)
	}
	out := logs.String()
	if !strings.Contains(out, "sessions exploded") || !strings.Contains(out, `"stack"`) {
		t.Errorf("panic not logged with a stack: %s", out)
	}
	if !strings.Contains(out, `"msg":"http request"`) || !strings.Contains(out, `"status":500`) {
		t.Errorf("request not logged at debug with its status: %s", out)
	}
}

func TestRequestLogIsDebug(t *testing.T) {
	d := deps()
	var logs bytes.Buffer
	d.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	do(t, New(d), http.MethodGet, "/healthz")
	if logs.Len() != 0 {
		t.Errorf("info logger got request lines: %s", logs.String())
	}
}

// The Go profiles are served only when asked for (AGENT_PPROF=1).
func TestPprofOnlyWhenOn(t *testing.T) {
	off := New(deps())
	if a := do(t, off, http.MethodGet, "/debug/pprof/"); a.status != http.StatusNotFound {
		t.Errorf("pprof off: /debug/pprof/ answered %d", a.status)
	}
	d := deps()
	d.Pprof = true
	on := New(d)
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/heap?debug=1":      "heap profile",
		"/debug/pprof/goroutine?debug=1": "goroutine profile",
	} {
		if a := do(t, on, http.MethodGet, path); a.status != http.StatusOK || !strings.Contains(a.body, want) {
			t.Errorf("pprof on: %s answered %d, body lacks %q", path, a.status, want)
		}
	}
	if a := do(t, on, http.MethodGet, "/debug/pprof/profile?seconds=1"); a.status != http.StatusOK || len(a.body) == 0 {
		t.Errorf("CPU profile: %d, %d bytes", a.status, len(a.body))
	}
	if a := do(t, on, http.MethodGet, "/healthz"); a.status != http.StatusOK {
		t.Errorf("healthz with pprof on: %d", a.status)
	}
}

// The profiles never show the command line (where a credential may have
// been typed): no /debug/pprof/cmdline, no expvar /debug/vars, and no
// profile named cmdline through the index.
func TestPprofServesNoCommandLine(t *testing.T) {
	d := deps()
	d.Pprof = true
	on := New(d)
	for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/cmdline?debug=1", "/debug/vars", "/debug/vars/"} {
		a := do(t, on, http.MethodGet, path)
		if a.status != http.StatusNotFound {
			t.Errorf("%s answered %d, want 404", path, a.status)
		}
		if strings.Contains(a.body, os.Args[0]) || strings.Contains(a.body, "memstats") {
			t.Errorf("%s shows the command line: %s", path, a.body)
		}
	}
	if a := do(t, on, http.MethodGet, "/debug/pprof"); a.status != http.StatusOK || !strings.Contains(a.body, "heap") {
		t.Errorf("/debug/pprof answered %d (want the index, redirected)", a.status)
	}
}

// With the metrics apart (AGENT_METRICS_PORT), the health port serves no
// /metrics and no profiles, and NewMetrics serves them and nothing else.
func TestMetricsApart(t *testing.T) {
	d := deps()
	d.Pprof = true
	d.MetricsApart = true
	d.Ingress = func(r chi.Router) {
		r.Post("/slack/events", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	}
	health, metricsOnly := New(d), NewMetrics(d)
	for _, tt := range []struct {
		h            http.Handler
		method, path string
		want         int
	}{
		{health, http.MethodGet, "/healthz", http.StatusOK},
		{health, http.MethodGet, "/readyz", http.StatusOK},
		{health, http.MethodPost, "/slack/events", http.StatusOK},
		{health, http.MethodGet, "/metrics", http.StatusNotFound},
		{health, http.MethodGet, "/debug/pprof/", http.StatusNotFound},
		{metricsOnly, http.MethodGet, "/metrics", http.StatusOK},
		{metricsOnly, http.MethodGet, "/debug/pprof/", http.StatusOK},
		{metricsOnly, http.MethodGet, "/healthz", http.StatusNotFound},
		{metricsOnly, http.MethodPost, "/slack/events", http.StatusNotFound},
	} {
		name := "health"
		if tt.h == metricsOnly {
			name = "metrics"
		}
		if a := do(t, tt.h, tt.method, tt.path); a.status != tt.want {
			t.Errorf("%s port: %s %s answered %d, want %d", name, tt.method, tt.path, a.status, tt.want)
		}
	}
	if a := do(t, metricsOnly, http.MethodGet, "/metrics"); !strings.Contains(a.body, "agent_sessions_live 3") {
		t.Errorf("metrics port: exposition lacks agent_sessions_live: %s", a.body)
	}
}
