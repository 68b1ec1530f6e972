package telemetry

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// env returns a getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// collector is an OTLP/HTTP endpoint that records the requests it gets.
type collector struct {
	mu   sync.Mutex
	reqs []string // "METHOD path content-type"
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *collector) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.reqs...)
}

func TestSetupWithoutEndpoint(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
	}{
		{"empty", nil},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			endpoint, err := tracesEndpoint(env(tt.vars))
			if err != nil || endpoint != "" {
				t.Fatalf("tracesEndpoint = %q, %v; want no exporter", endpoint, err)
			}
			tp, shutdown, err := Setup(context.Background(), "agent", "v1.2.3", env(tt.vars), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, span := tp.Tracer("test").Start(context.Background(), "op")
			sc := span.SpanContext()
			span.End()
			// Nothing reads the spans: they carry ids (for the logs and the
			// inbox) but record nothing.
			if !sc.IsValid() || span.IsRecording() {
				t.Errorf("span context %v, recording %v: want valid ids and no recording", sc, span.IsRecording())
			}
			if err := shutdown(context.Background()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if err := shutdown(context.Background()); err != nil {
				t.Errorf("second shutdown: %v", err)
			}
		})
	}
}

func TestSetupNilGetenv(t *testing.T) {
	tp, shutdown, err := Setup(context.Background(), "agent", "dev", nil, nil)
	if err != nil || tp == nil {
		t.Fatalf("Setup = %v, %v", tp, err)
	}
	_ = shutdown(context.Background())
}

func TestSetupResource(t *testing.T) {
	tests := []struct {
		name, override, want string
	}{
		{"default", "", "agent"},
		{"OTEL_SERVICE_NAME", "custom", "custom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder() // something reads the spans: they are recorded
			tp, shutdown, err := Setup(context.Background(), "agent", "v1.2.3", env(map[string]string{"OTEL_SERVICE_NAME": tt.override}), nil, rec)
			if err != nil {
				t.Fatal(err)
			}
			defer shutdown(context.Background())
			_, span := tp.Tracer("test").Start(context.Background(), "op")
			span.End()
			if !span.SpanContext().IsSampled() || len(rec.Ended()) != 1 {
				t.Errorf("with a span processor: sampled %v, %d spans recorded; want sampled, 1", span.SpanContext().IsSampled(), len(rec.Ended()))
			}
			ro, ok := span.(sdktrace.ReadOnlySpan)
			if !ok {
				t.Fatalf("span %T is not an SDK span", span)
			}
			got := map[string]string{}
			for _, kv := range ro.Resource().Attributes() {
				got[string(kv.Key)] = kv.Value.Emit()
			}
			if got["service.name"] != tt.want || got["service.version"] != "v1.2.3" {
				t.Errorf("resource %v: want service.name %q, service.version v1.2.3", got, tt.want)
			}
		})
	}
}

func TestTracesEndpoint(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		want    string
		wantErr bool
	}{
		{"base", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces", false},
		{"base with path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://gw.example/otlp/"}, "https://gw.example/otlp/v1/traces", false},
		{"per signal as is", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom"}, "http://c:4318/custom", false},
		{"per signal wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/t"}, "http://b:2/t", false},
		{"no scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "", true},
		{"bad url", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://[::1"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tracesEndpoint(env(tt.vars))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("tracesEndpoint = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSetupBadEndpoint(t *testing.T) {
	_, _, err := Setup(context.Background(), "agent", "dev", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}), nil)
	if err == nil {
		t.Fatal("Setup accepted an endpoint without scheme")
	}
}

func TestSetupExportsToEndpoint(t *testing.T) {
	for _, key := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Run(key, func(t *testing.T) {
			c := &collector{}
			srv := httptest.NewServer(c)
			defer srv.Close()
			value := srv.URL
			if key == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" {
				value += "/v1/traces"
			}
			tp, shutdown, err := Setup(context.Background(), "agent", "v1.2.3", env(map[string]string{key: value}), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, span := tp.Tracer("test").Start(context.Background(), "op")
			span.End()

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := shutdown(ctx); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			reqs := c.requests()
			if len(reqs) == 0 {
				t.Fatal("collector received nothing")
			}
			if want := "POST /v1/traces application/x-protobuf"; reqs[0] != want {
				t.Errorf("request %q, want %q", reqs[0], want)
			}
		})
	}
}

// The exporter speaks OTLP/HTTP protobuf: a collector decoding the body as
// an ExportTraceServiceRequest finds the span, with the configured headers,
// gzip when asked, and a retry after a 503.
func TestOTLPExportPayload(t *testing.T) {
	var mu sync.Mutex
	var names []string
	var auth, encoding string
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		auth, encoding = r.Header.Get("Authorization"), r.Header.Get("Content-Encoding")
		var body io.Reader = r.Body
		if encoding == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 || num != 1 || typ != protowire.BytesType {
				t.Errorf("field %d type %d: want resource_spans", num, typ)
				return
			}
			b = b[n:]
			m, n := protowire.ConsumeBytes(b)
			b = b[n:]
			var rs tracepb.ResourceSpans
			if err := proto.Unmarshal(m, &rs); err != nil {
				t.Error(err)
				return
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					names = append(names, sp.Name)
				}
			}
		}
	}))
	defer srv.Close()
	vars := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    srv.URL,
		"OTEL_EXPORTER_OTLP_HEADERS":     "Authorization=Bearer%20abc, X-Team=ops",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
	}
	tp, shutdown, err := Setup(context.Background(), "agent", "v1", env(vars), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "chat.event")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 || len(names) != 1 || names[0] != "chat.event" || auth != "Bearer abc" || encoding != "gzip" {
		t.Errorf("calls %d, spans %v, Authorization %q, Content-Encoding %q", calls, names, auth, encoding)
	}
}

func TestOTLPBadSettings(t *testing.T) {
	for _, vars := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
		{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"},
	} {
		vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://collector:4318"
		if _, _, err := Setup(context.Background(), "agent", "v1", env(vars), nil); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_") {
			t.Errorf("%v: Setup = %v, want an error naming the variable", vars, err)
		}
	}
}
