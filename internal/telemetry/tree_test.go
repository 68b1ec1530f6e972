package telemetry

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/fake/golden"
)

// The tree of a trace: children under their parent in start order, each
// with its attributes, a drop event and an error; printed when the root
// ends, and late spans of a printed trace are not kept.
func TestTreePrinter(t *testing.T) {
	var out bytes.Buffer
	p := NewTreePrinter(&out)
	p.Duration = func(time.Duration) string { return "1.0ms" }
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	tr := tp.Tracer("test")
	ctx := context.Background()

	ctx1, root := tr.Start(ctx, "chat.event", trace.WithAttributes(attribute.String("event_id", "Ev1"), attribute.String("kind", "message")))
	ctx2, drop := tr.Start(ctx1, "pipeline.drop")
	drop.SetAttributes(attribute.String("outcome", "pass"))
	ctx3, agent := tr.Start(ctx2, "pipeline.agent")
	_, llm := tr.Start(ctx3, "llm.request", trace.WithAttributes(attribute.String("gen_ai.request.model", "claude-test"),
		attribute.Int64("gen_ai.usage.input_tokens", 2718), attribute.StringSlice("gen_ai.response.finish_reasons", []string{"tool_use"})))
	llm.End()
	ctx4, tool := tr.Start(ctx3, "tool.Bash")
	_, post := tr.Start(ctx4, "chat.post")
	post.RecordError(errors.New("chat.postMessage: not_in_channel"))
	post.SetStatus(codes.Error, "chat.postMessage: not_in_channel")
	post.End()
	tool.End()
	agent.End()
	drop.End()
	if out.Len() != 0 {
		t.Fatalf("printed before the root ended:\n%s", out.String())
	}
	root.End()

	_, dropped := tr.Start(ctx, "chat.event", trace.WithAttributes(attribute.String("event_id", "Ev2")))
	_, stage := tr.Start(trace.ContextWithSpan(ctx, dropped), "pipeline.drop")
	stage.SetAttributes(attribute.String("outcome", "drop"), attribute.String("reason", "whitelist"))
	stage.AddEvent("dropped", trace.WithAttributes(attribute.String("reason", "whitelist")))
	stage.End()
	dropped.End()
	_, late := tr.Start(ctx1, "late")
	late.End()

	golden.Check(t, filepath.Join("testdata", "tree.golden"), out.Bytes())
	if strings.Contains(out.String(), "late") || len(p.pending) != 0 {
		t.Errorf("a span of a printed trace was kept: %d pending", len(p.pending))
	}
}

// OTEL_TRACES_EXPORTER=console prints the trees on stderr; an unknown
// exporter is refused.
func TestConsoleExporter(t *testing.T) {
	var stderr bytes.Buffer
	tp, shutdown, err := Setup(context.Background(), "agent", "dev", env(map[string]string{"OTEL_TRACES_EXPORTER": "console"}), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	_, s := tp.Tracer("t").Start(context.Background(), "chat.event")
	s.End()
	if !strings.HasPrefix(stderr.String(), "chat.event ") {
		t.Errorf("stderr = %q", stderr.String())
	}
	if _, _, err := Setup(context.Background(), "agent", "dev", env(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}), nil); err == nil ||
		!strings.Contains(err.Error(), `OTEL_TRACES_EXPORTER: unsupported exporter "zipkin"`) {
		t.Errorf("err = %v", err)
	}
}
