package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/llm"
)

const testKey = "sk-ant-api03-secret-test-key"

// env is a client against a fake, with its span recorder and metrics.
type env struct {
	fake    *fake.Anthropic
	client  *llm.Client
	spans   *tracetest.SpanRecorder
	metrics *llm.Metrics
}

// newEnv returns a client for cfg (BaseURL and, without an OAuth token, the
// API key filled in) against a new fake.
func newEnv(t *testing.T, cfg llm.Config) *env {
	t.Helper()
	e := &env{fake: fake.NewAnthropic(t), spans: tracetest.NewSpanRecorder()}
	cfg.BaseURL = e.fake.URL()
	if cfg.OAuthToken == "" && cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	e.metrics = &llm.Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llm_requests_total"}, []string{"outcome"}),
		Tokens:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llm_tokens_total"}, []string{"kind", "model"}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "llm_request_seconds"}),
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.spans))
	c, err := llm.New(cfg, slog.New(slog.DiscardHandler), tp.Tracer("test"), e.metrics)
	if err != nil {
		t.Fatal(err)
	}
	e.client = c
	return e
}

func userParams(text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		MaxTokens: 64000, // over what the SDK allows without streaming
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
}

func TestNewConfigErrors(t *testing.T) {
	badLabels := &llm.Metrics{Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"a", "b"})}
	tests := []struct {
		name string
		cfg  llm.Config
		m    *llm.Metrics
		is   error
	}{
		{name: "no credential", cfg: llm.Config{}, is: llm.ErrNoCredential},
		{name: "both credentials", cfg: llm.Config{APIKey: testKey, OAuthToken: "sk-ant-oat01-x"}},
		{name: "relative base URL", cfg: llm.Config{APIKey: testKey, BaseURL: "localhost:8080"}},
		{name: "bad scheme", cfg: llm.Config{APIKey: testKey, BaseURL: "ftp://example.com"}},
		{name: "wrong metric labels", cfg: llm.Config{APIKey: testKey}, m: badLabels},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := llm.New(tt.cfg, nil, nil, tt.m)
			if err == nil || c != nil {
				t.Fatalf("New = %v, %v; want an error", c, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error holds the key: %v", err)
			}
		})
	}
}

// TestAuthHeaders checks the credential headers, and that ANTHROPIC_*
// variables in the environment do not reach the request.
func TestAuthHeaders(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-env-api-key")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "sk-env-auth-token")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Env-Leak: 1")

	tests := []struct {
		name      string
		cfg       llm.Config
		apiKey    string
		bearer    string
		wantBeta  bool
		wantModel string
	}{
		{name: "api key", cfg: llm.Config{APIKey: testKey}, apiKey: testKey, wantModel: llm.DefaultModel},
		{name: "oauth token", cfg: llm.Config{OAuthToken: "sk-ant-oat01-token", Model: "claude-opus-4-1"},
			bearer: "Bearer sk-ant-oat01-token", wantBeta: true, wantModel: "claude-opus-4-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg)
			if e.client.Model() != tt.wantModel {
				t.Errorf("Model() = %q, want %q", e.client.Model(), tt.wantModel)
			}
			if _, err := e.client.Send(t.Context(), userParams("hi")); err != nil {
				t.Fatal(err)
			}
			reqs := e.fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d", len(reqs))
			}
			h := reqs[0].Header
			if got := h.Get("x-api-key"); got != tt.apiKey {
				t.Errorf("x-api-key = %q, want %q", got, tt.apiKey)
			}
			if got := h.Get("Authorization"); got != tt.bearer {
				t.Errorf("Authorization = %q, want %q", got, tt.bearer)
			}
			if got := strings.Contains(h.Get("anthropic-beta"), llm.OAuthBeta); got != tt.wantBeta {
				t.Errorf("anthropic-beta = %q", h.Get("anthropic-beta"))
			}
			if h.Get("X-Env-Leak") != "" {
				t.Error("ANTHROPIC_CUSTOM_HEADERS leaked into the request")
			}
			for name, vals := range h {
				for _, v := range vals {
					if strings.Contains(v, "sk-env") {
						t.Errorf("header %s carries an environment credential", name)
					}
				}
			}
			if reqs[0].Model != tt.wantModel || !reqs[0].Stream {
				t.Errorf("model %q stream %v", reqs[0].Model, reqs[0].Stream)
			}
		})
	}
}

func TestSendAccumulates(t *testing.T) {
	e := newEnv(t, llm.Config{})
	input := map[string]any{"command": "grep -rn 'needle' ./src", "description": "search — ünïcode"}
	e.fake.Enqueue(fake.AnthropicResponse{
		Content: []fake.AnthropicBlock{
			fake.AnthropicText("I will search the tree for it."),
			fake.AnthropicToolUse("toolu_01", "Bash", input),
		},
		Usage: fake.AnthropicUsage{InputTokens: 120, OutputTokens: 40, CacheReadInputTokens: 900, CacheCreationInputTokens: 30},
	})
	msg, err := e.client.Send(t.Context(), userParams("find the needle"))
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 {
		t.Fatalf("message = %+v", msg)
	}
	if msg.Content[0].Text != "I will search the tree for it." {
		t.Errorf("text = %q", msg.Content[0].Text)
	}
	tu := msg.Content[1].AsToolUse()
	var got map[string]any
	if err := json.Unmarshal(tu.Input, &got); err != nil {
		t.Fatalf("input %s: %v", tu.Input, err)
	}
	if tu.ID != "toolu_01" || tu.Name != "Bash" || got["command"] != input["command"] || got["description"] != input["description"] {
		t.Errorf("tool_use = %+v, input %v", tu, got)
	}
	if u := msg.Usage; u.InputTokens != 120 || u.OutputTokens != 40 || u.CacheReadInputTokens != 900 || u.CacheCreationInputTokens != 30 {
		t.Errorf("usage = %+v", u)
	}
	// The message goes back into the history as is: the fake checks the
	// pairing rule on the follow-up.
	next := userParams("find the needle")
	next.Messages = append(next.Messages, msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_01", "src/a.go:3: needle", false)))
	if _, err := e.client.Send(t.Context(), next); err != nil {
		t.Fatal(err)
	}

	m := e.metrics
	for kind, want := range map[string]float64{"input": 120, "output": 40, "cache_read": 900, "cache_write": 30} {
		if got := testutil.ToFloat64(m.Tokens.WithLabelValues(kind, e.client.Model())); got < want {
			t.Errorf("tokens{kind=%s} = %v, want at least %v", kind, got, want)
		}
	}
	if got := testutil.ToFloat64(m.Requests.WithLabelValues("ok")); got != 2 {
		t.Errorf("requests{outcome=ok} = %v", got)
	}
}

func TestSendJSONAnswerToStream(t *testing.T) {
	e := newEnv(t, llm.Config{})
	resp := fake.ToolUse("toolu_7", "Read", map[string]string{"path": "README.md"})
	resp.NoStream = true
	e.fake.Enqueue(resp)
	msg, err := e.client.Send(t.Context(), userParams("read it"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].ID != "toolu_7" || string(msg.Content[0].Input) != `{"path":"README.md"}` || msg.StopReason != "tool_use" {
		t.Errorf("message = %+v", msg)
	}
}

func TestSendRetriesOverload(t *testing.T) {
	e := newEnv(t, llm.Config{})
	e.fake.Enqueue(fake.AnthropicResponse{Status: 529, RetryAfterMs: "0"}, fake.TextReply("after the storm"))
	msg, err := e.client.Send(t.Context(), userParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "after the storm" {
		t.Errorf("text = %q", msg.Content[0].Text)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
	span := onlySpan(t, e.spans)
	if got := attr(span, "llm.attempts"); got.AsInt64() != 2 {
		t.Errorf("llm.attempts = %v", got.Emit())
	}
	if got := testutil.ToFloat64(e.metrics.Requests.WithLabelValues("ok")); got != 1 {
		t.Errorf("requests{outcome=ok} = %v, want 1 (one call)", got)
	}
}

func TestSendErrors(t *testing.T) {
	overloaded := fake.AnthropicResponse{Status: 529, RetryAfterMs: "0"}
	tests := []struct {
		name     string
		retries  int
		script   []fake.AnthropicResponse
		requests int
		is       []error
		isNot    []error
		outcome  string
	}{
		{name: "retries exhausted", retries: 2, script: []fake.AnthropicResponse{overloaded, overloaded, overloaded},
			requests: 3, is: []error{llm.ErrUnavailable}, isNot: []error{llm.ErrInvalidRequest}, outcome: "unavailable"},
		{name: "rate limited", retries: -1, script: []fake.AnthropicResponse{fake.APIError(429, "", "slow down")},
			requests: 1, is: []error{llm.ErrUnavailable}, outcome: "unavailable"},
		{name: "server error", retries: -1, script: []fake.AnthropicResponse{fake.APIError(500, "", "")},
			requests: 1, is: []error{llm.ErrUnavailable}, outcome: "unavailable"},
		{name: "unauthorized", script: []fake.AnthropicResponse{fake.APIError(401, "", "invalid x-api-key")},
			requests: 1, is: []error{llm.ErrAuth}, isNot: []error{llm.ErrUnavailable}, outcome: "auth"},
		{name: "key echoed", script: []fake.AnthropicResponse{fake.APIError(403, "", "key "+testKey+" may not use this model")},
			requests: 1, is: []error{llm.ErrAuth}, outcome: "auth"},
		{name: "prompt too long", script: []fake.AnthropicResponse{fake.APIError(400, "", "prompt is too long: 210000 tokens > 200000 maximum")},
			requests: 1, is: []error{llm.ErrInvalidRequest, llm.ErrContextTooLong}, outcome: "context_too_long"},
		{name: "invalid request", script: []fake.AnthropicResponse{fake.APIError(400, "", "messages.0.content: Field required")},
			requests: 1, is: []error{llm.ErrInvalidRequest}, isNot: []error{llm.ErrContextTooLong}, outcome: "invalid_request"},
		{name: "error event", script: []fake.AnthropicResponse{fake.AnthropicStreamError("overloaded_error", "Overloaded")},
			requests: 1, is: []error{llm.ErrUnavailable}, outcome: "unavailable"},
		{name: "stream cut", script: []fake.AnthropicResponse{{Content: []fake.AnthropicBlock{fake.AnthropicText("half an answ")}, TruncateAfter: 4}},
			requests: 1, is: []error{llm.ErrUnavailable}, outcome: "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, llm.Config{MaxRetries: tt.retries})
			e.fake.Enqueue(tt.script...)
			msg, err := e.client.Send(t.Context(), userParams("hi"))
			if err == nil {
				t.Fatalf("Send = %+v, want an error", msg)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("err = %v, does not match %v", err, target)
				}
			}
			for _, target := range tt.isNot {
				if errors.Is(err, target) {
					t.Errorf("err = %v, matches %v", err, target)
				}
			}
			var llmErr *llm.Error
			if !errors.As(err, &llmErr) {
				t.Errorf("err %T is not an *llm.Error", err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error holds the key: %v", err)
			}
			if n := len(e.fake.Requests()); n != tt.requests {
				t.Errorf("requests = %d, want %d", n, tt.requests)
			}
			if got := testutil.ToFloat64(e.metrics.Requests.WithLabelValues(tt.outcome)); got != 1 {
				t.Errorf("requests{outcome=%s} = %v", tt.outcome, got)
			}
			span := onlySpan(t, e.spans)
			if span.Status().Code != codes.Error || strings.Contains(span.Status().Description, testKey) {
				t.Errorf("span status = %+v", span.Status())
			}
		})
	}
}

func TestSendConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(nil)
	base := srv.URL
	srv.Close()
	c, err := llm.New(llm.Config{APIKey: testKey, BaseURL: base, MaxRetries: -1}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(t.Context(), userParams("hi"))
	if !errors.Is(err, llm.ErrUnavailable) || strings.Contains(err.Error(), testKey) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}

func TestSendCanceled(t *testing.T) {
	e := newEnv(t, llm.Config{})
	gate := make(chan struct{})
	defer close(gate)
	resp := fake.TextReply("never")
	resp.Gate = gate
	e.fake.Enqueue(resp)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := e.client.Send(ctx, userParams("hi"))
		errc <- err
	}()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if err := e.fake.WaitRequests(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("err = %v, want context.Canceled only", err)
	}
	if got := testutil.ToFloat64(e.metrics.Requests.WithLabelValues("canceled")); got != 1 {
		t.Errorf("requests{outcome=canceled} = %v", got)
	}
}

func TestSendAttemptTimeout(t *testing.T) {
	e := newEnv(t, llm.Config{MaxRetries: -1, Timeout: 50 * time.Millisecond})
	gate := make(chan struct{})
	defer close(gate)
	resp := fake.TextReply("too late")
	resp.Gate = gate
	e.fake.Enqueue(resp)
	_, err := e.client.Send(t.Context(), userParams("hi"))
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}

func TestSendSpan(t *testing.T) {
	e := newEnv(t, llm.Config{Model: "claude-test"})
	e.fake.Enqueue(fake.AnthropicResponse{
		Content: []fake.AnthropicBlock{fake.AnthropicText("hello")},
		Usage:   fake.AnthropicUsage{InputTokens: 11, OutputTokens: 5, CacheReadInputTokens: 3, CacheCreationInputTokens: 2},
	})
	if _, err := e.client.Send(t.Context(), userParams("hi")); err != nil {
		t.Fatal(err)
	}
	span := onlySpan(t, e.spans)
	if span.Name() != "llm.request" || span.Status().Code == codes.Error {
		t.Errorf("span %q status %+v", span.Name(), span.Status())
	}
	want := map[attribute.Key]string{
		"gen_ai.request.model":                     "claude-test",
		"gen_ai.response.finish_reasons":           `["end_turn"]`,
		"gen_ai.usage.input_tokens":                "11",
		"gen_ai.usage.output_tokens":               "5",
		"gen_ai.usage.cache_read.input_tokens":     "3",
		"gen_ai.usage.cache_creation.input_tokens": "2",
		"llm.attempts":                             "1",
	}
	for k, v := range want {
		if got := attr(span, k).Emit(); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestNilTelemetry(t *testing.T) {
	f := fake.NewAnthropic(t)
	for _, m := range []*llm.Metrics{nil, {}} {
		c, err := llm.New(llm.Config{APIKey: testKey, BaseURL: f.URL()}, nil, nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Send(t.Context(), userParams("hi")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCountTokens(t *testing.T) {
	e := newEnv(t, llm.Config{})
	n, err := e.client.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("token ", 200)))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 {
		t.Errorf("count = %d", n)
	}
	if r := e.fake.Requests()[0]; r.Path != "/v1/messages/count_tokens" || r.Model != llm.DefaultModel {
		t.Errorf("request %s model %q", r.Path, r.Model)
	}
}

// onlySpan returns the one span the recorder holds.
func onlySpan(t *testing.T, rec *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("spans = %d, want 1", len(spans))
	}
	return spans[0]
}

// attr returns the value of the span's attribute k.
func attr(span sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range span.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}
