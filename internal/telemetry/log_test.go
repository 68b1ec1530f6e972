package telemetry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/slogtest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

const secret = "xoxb-1234567890-SECRETSECRET"

// lines decodes the JSON lines of buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("decode %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLoggerTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "json", slog.LevelInfo)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	log.InfoContext(ctx, "inside", "k", "v")
	log.WithGroup("g").InfoContext(ctx, "grouped", "k", "v")
	span.End()
	log.InfoContext(context.Background(), "outside")
	log.Info("no context")

	got := lines(t, &buf)
	if len(got) != 4 {
		t.Fatalf("got %d lines, want 4: %s", len(got), buf.String())
	}
	sc := span.SpanContext()
	for _, l := range got[:2] {
		if l[TraceIDKey] != sc.TraceID().String() || l[SpanIDKey] != sc.SpanID().String() {
			t.Errorf("line %v: want top-level trace_id %s span_id %s", l, sc.TraceID(), sc.SpanID())
		}
	}
	if g, ok := got[1]["g"].(map[string]any); !ok || g["k"] != "v" {
		t.Errorf("grouped line %v: want g.k=v", got[1])
	}
	for _, l := range got[2:] {
		if _, ok := l[TraceIDKey]; ok {
			t.Errorf("line %v: trace_id outside a span", l)
		}
		if _, ok := l[SpanIDKey]; ok {
			t.Errorf("line %v: span_id outside a span", l)
		}
	}
}

type tokenStruct struct{ Token string }

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved " + secret) }

func TestLoggerScrubsSecrets(t *testing.T) {
	tests := []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{"message", func(l *slog.Logger) { l.Info("token is " + secret) }},
		{"base64 in a message", func(l *slog.Logger) {
			l.Info("output: " + base64.StdEncoding.EncodeToString([]byte("TOKEN="+secret)))
		}},
		{"wrapped hex attr", func(l *slog.Logger) {
			h := hex.EncodeToString([]byte(secret))
			l.Info("m", "out", h[:20]+"\n"+h[20:])
		}},
		{"string attr", func(l *slog.Logger) { l.Info("m", "token", secret) }},
		{"error attr", func(l *slog.Logger) { l.Info("m", "err", fmt.Errorf("auth.test: %w", errors.New("bad token "+secret))) }},
		{"nested group", func(l *slog.Logger) { l.Info("m", slog.Group("a", slog.Group("b", "token", "x"+secret+"y"))) }},
		{"with attrs", func(l *slog.Logger) { l.With("token", secret).Info("m") }},
		{"with attrs in group", func(l *slog.Logger) { l.WithGroup("g").With("token", secret).Info("m") }},
		{"any value", func(l *slog.Logger) { l.Info("m", "cfg", tokenStruct{Token: secret}) }},
		{"log valuer", func(l *slog.Logger) { l.Info("m", "v", valuer{}) }},
		{"slice value", func(l *slog.Logger) { l.Info("m", "list", []string{"a", secret}) }},
	}
	for _, format := range []string{"json", "text"} {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				var buf bytes.Buffer
				tt.log(NewLogger(&buf, format, slog.LevelInfo, secret, "", "short"))
				out := buf.String()
				if strings.Contains(out, secret) || strings.Contains(out, "SECRETSECRET") {
					t.Errorf("secret in output: %s", out)
				}
				if !strings.Contains(out, Redacted) {
					t.Errorf("no %s marker in output: %s", Redacted, out)
				}
			})
		}
	}
}

// TestHandlerScrubsWithoutWriter checks the Handler alone, without the
// scrubbing writer NewLogger adds behind it.
func TestHandlerScrubsWithoutWriter(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil), secret))
	log.With("a", secret).WithGroup("g").With("b", secret).Info("msg "+secret,
		"err", errors.New("failed with "+secret), "s", secret, "any", tokenStruct{secret})
	if out := buf.String(); strings.Contains(out, secret) {
		t.Errorf("secret in output: %s", out)
	}
	got := lines(t, &buf)[0]
	if got["msg"] != "msg "+Redacted || got["a"] != Redacted {
		t.Errorf("got %v", got)
	}
	g, _ := got["g"].(map[string]any)
	if g["b"] != Redacted || g["err"] != "failed with "+Redacted || g["s"] != Redacted {
		t.Errorf("group g = %v", g)
	}
}

func TestLoggerShortSecretsIgnored(t *testing.T) {
	var buf bytes.Buffer
	NewLogger(&buf, "json", slog.LevelInfo, "x", "test").Info("a test message", "k", "x")
	if strings.Contains(buf.String(), Redacted) {
		t.Errorf("short secrets scrubbed: %s", buf.String())
	}
}

func TestLoggerFormats(t *testing.T) {
	tests := []struct {
		format string
		json   bool
	}{
		{"json", true},
		{"text", false},
		{"TEXT", false},
		{"", true},
		{"yaml", true},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			NewLogger(&buf, tt.format, slog.LevelInfo).Info("hello", "k", "v")
			out := buf.String()
			if isJSON := json.Valid(bytes.TrimSpace(buf.Bytes())); isJSON != tt.json {
				t.Errorf("format %q: JSON=%v, want %v: %s", tt.format, isJSON, tt.json, out)
			}
			if !tt.json && !strings.Contains(out, "msg=hello k=v") {
				t.Errorf("text output %q", out)
			}
		})
	}
}

func TestLoggerLevel(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "json", slog.LevelWarn)
	log.Info("dropped")
	log.Warn("kept")
	if got := lines(t, &buf); len(got) != 1 || got[0]["msg"] != "kept" {
		t.Errorf("got %v", got)
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in   string
		want slog.Level
	}{
		{"debug", slog.LevelDebug},
		{"DEBUG", slog.LevelDebug},
		{" info ", slog.LevelInfo},
		{"warn", slog.LevelWarn},
		{"warning", slog.LevelWarn},
		{"error", slog.LevelError},
		{"info+2", slog.LevelInfo + 2},
		{"", slog.LevelInfo},
		{"loud", slog.LevelInfo},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ParseLevel(tt.in); got != tt.want {
				t.Errorf("ParseLevel(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestHandlerConformance runs the standard slog handler tests over the
// Handler wrapping a JSON handler.
func TestHandlerConformance(t *testing.T) {
	var buf bytes.Buffer
	newHandler := func(t *testing.T) slog.Handler {
		buf.Reset()
		return NewHandler(slog.NewJSONHandler(&buf, nil), secret)
	}
	result := func(t *testing.T) map[string]any {
		got := lines(t, &buf)
		if len(got) != 1 {
			t.Fatalf("got %d records, want 1", len(got))
		}
		return got[0]
	}
	slogtest.Run(t, newHandler, result)
}

func TestNewHandlerNilInner(t *testing.T) {
	slog.New(NewHandler(nil, secret)).Info("nothing happens")
}
