package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// tracesPath is the path OTLP/HTTP appends to OTEL_EXPORTER_OTLP_ENDPOINT
// (the per-signal variable is used as is), per the OTLP exporter spec.
const tracesPath = "/v1/traces"

// Setup returns a tracer provider for service at version and the function
// that flushes and stops it.
//
// The provider always samples (the service handles a few events a second at
// most, and log lines need valid ids to be correlated). Spans are exported
// over OTLP/HTTP (protobuf, batched) only when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT (a base to which /v1/traces is
// appended) is set; OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn
// the exporter off. OTEL_SERVICE_NAME overrides service. Those variables are
// read through getenv, as are OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, _TIMEOUT
// and _COMPRESSION (otlpClient). Other samplers, protocols, client
// certificates and OTEL_RESOURCE_ATTRIBUTES are not supported.
//
// OTEL_TRACES_EXPORTER=console prints each trace to stderr as a tree
// (TreePrinter) instead; procs are further span processors (the tree of
// `--trace`).
//
// Setup sets no otel globals. shutdown flushes the pending spans within
// ctx's deadline and may be called more than once.
func Setup(ctx context.Context, service, version string, getenv func(string) string, stderr io.Writer,
	procs ...sdktrace.SpanProcessor) (tp *sdktrace.TracerProvider, shutdown func(context.Context) error, err error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		service = name
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceVersion(version)),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("otel resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, p := range procs {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "", "otlp", "none", "console":
	default:
		return nil, nil, fmt.Errorf("OTEL_TRACES_EXPORTER: unsupported exporter %q (want otlp, console or none)", exporter)
	}
	console := exporter == "console" && stderr != nil && !strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true")
	if console {
		opts = append(opts, sdktrace.WithSpanProcessor(NewTreePrinter(stderr)))
	}
	endpoint, err := tracesEndpoint(getenv)
	if err != nil {
		return nil, nil, err
	}
	if endpoint != "" {
		client, err := newOTLPClient(endpoint, getenv)
		if err != nil {
			return nil, nil, err
		}
		exp, err := otlptrace.New(ctx, client)
		if err != nil {
			return nil, nil, fmt.Errorf("otlp trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	// Spans are recorded only for something that reads them. Without, they
	// still carry trace and span ids (the logs' trace_id, the inbox's), but
	// no attributes are kept: a dozen spans a turn, for nobody.
	sampler := sdktrace.AlwaysSample()
	if len(procs) == 0 && !console && endpoint == "" {
		sampler = sdktrace.NeverSample()
	}
	opts = append(opts, sdktrace.WithSampler(sampler))
	tp = sdktrace.NewTracerProvider(opts...)
	shutdown = func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracer provider shutdown: %w", err)
		}
		return nil
	}
	return tp, shutdown, nil
}

// tracesEndpoint returns the full URL spans are posted to, or "" when
// nothing is to be exported.
func tracesEndpoint(getenv func(string) string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return "", nil
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none", "console":
		return "", nil
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		if _, err := parseEndpoint(v); err != nil {
			return "", fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: %w", err)
		}
		return v, nil
	}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		u, err := parseEndpoint(v)
		if err != nil {
			return "", fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
		}
		u.Path = path.Join("/", u.Path, tracesPath)
		u.RawPath = ""
		return u.String(), nil
	}
	return "", nil
}

// parseEndpoint checks that v is an absolute http or https URL: the
// exporter would otherwise silently fall back to localhost:4318.
func parseEndpoint(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("parse endpoint: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("endpoint must be an http or https URL, such as http://collector:4318")
	}
	return u, nil
}
