// Package telemetry sets up the service's tracing and logging.
//
// Setup builds an OpenTelemetry SDK tracer provider that always samples, so
// that log lines carry real trace and span ids even when no exporter is
// configured; it exports over OTLP/HTTP only when an OTLP endpoint is set.
// It sets no otel globals: callers pass the provider's tracers down.
//
// NewLogger builds the slog logger: JSON or text, with a Handler that adds
// trace_id and span_id from the context to every record and scrubs the
// service's secret values from messages and attributes, so a credential
// never reaches the log output, not even inside an error message.
package telemetry
