package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpClient posts spans to an OTLP/HTTP collector as protobuf: an
// otlptrace.Client. It stands in for otlptracehttp, whose shared
// configuration package links gRPC (and with it html/template, which makes
// the linker keep every exported method of every type: +17 MB of binary
// and +5 MiB of resident memory for a feature most personas never turn on).
type otlpClient struct {
	endpoint string
	headers  map[string]string
	gzip     bool
	timeout  time.Duration
	http     *http.Client
}

// newOTLPClient reads the OTEL_EXPORTER_OTLP_[TRACES_]{HEADERS,TIMEOUT,
// COMPRESSION} settings through getenv.
func newOTLPClient(endpoint string, getenv func(string) string) (*otlpClient, error) {
	setting := func(name string) string {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
	}
	c := &otlpClient{endpoint: endpoint, headers: map[string]string{}, timeout: 10 * time.Second}
	if v := setting("HEADERS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value", strings.TrimSpace(kv))
			}
			dec, err := url.PathUnescape(strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: value of %s: %w", k, err)
			}
			c.headers[k] = dec
		}
	}
	if v := setting("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT: %q is not a positive number of milliseconds", v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := strings.ToLower(setting("COMPRESSION")); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION: %q is not gzip or none", v)
	}
	c.http = &http.Client{Timeout: c.timeout}
	return c, nil
}

func (c *otlpClient) Start(context.Context) error { return nil }

func (c *otlpClient) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces posts one ExportTraceServiceRequest, retrying what the OTLP
// spec calls retryable (429, 502, 503, 504) until the timeout.
func (c *otlpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := encodeExportRequest(spans)
	if err != nil {
		return err
	}
	if c.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		body = buf.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	wait := 250 * time.Millisecond
	for {
		retry, err := c.post(ctx, body)
		if err == nil || retry < 0 {
			return err
		}
		if retry > 0 {
			wait = retry
		}
		select {
		case <-time.After(wait):
			wait *= 2
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		}
	}
}

// post sends body once. retry < 0: final; otherwise retry after that long
// (0: the caller's backoff).
func (c *otlpClient) post(ctx context.Context, body []byte) (retry time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("otlp export: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return 0, nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return time.Duration(after) * time.Second, fmt.Errorf("otlp export: %s", resp.Status)
	default:
		return -1, fmt.Errorf("otlp export: %s", resp.Status)
	}
}

// encodeExportRequest encodes opentelemetry.proto.collector.trace.v1.
// ExportTraceServiceRequest, whose only field is `repeated ResourceSpans
// resource_spans = 1`. The generated type lives in a package that links
// gRPC, so the envelope is written here.
func encodeExportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, fmt.Errorf("otlp export: %w", err)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}
