package llm

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/pkg/httppool"
)

const (
	// DefaultModel is the model of a Config without one.
	DefaultModel = string(anthropic.ModelClaudeSonnet4_5)
	// DefaultMaxRetries is how often a Config with MaxRetries 0 retries a
	// failed attempt. One more than the SDK's own default of 2: an agent turn
	// that fails is visible in chat, so a few more seconds of backoff are the
	// better trade.
	DefaultMaxRetries = 3
	// OAuthBeta is the anthropic-beta value the provider requires with an
	// OAuth (subscription) token.
	OAuthBeta = "oauth-2025-04-20"
	// defaultResponseHeaderTimeout bounds the wait for response headers on
	// the default HTTP client, as the SDK's own default client does
	// (internal/requestconfig/defaultclient.go); streams are not affected.
	defaultResponseHeaderTimeout = 10 * time.Minute
)

// Config is what the client needs. The package reads no environment
// variable; cmd maps LLM_API_KEY, LLM_OAUTH_TOKEN, LLM_BASE_URL and AGENT_MODEL
// onto it.
type Config struct {
	// BaseURL is the address requests go to, without /v1 (requests go to
	// BaseURL/v1/messages). Empty: the provider's own.
	BaseURL string
	// APIKey is a metered API key, sent as x-api-key. Exactly one of APIKey
	// and OAuthToken must be set; API keys are the supported path.
	APIKey string
	// OAuthToken is a subscription token, sent as Authorization: Bearer with
	// the anthropic-beta header [OAuthBeta].
	OAuthToken string
	// Model is used for requests that name none. Empty: [DefaultModel].
	Model string
	// MaxRetries is how often a failed attempt (408, 409, 429, 5xx, 529, a
	// failed connection) is retried, with backoff that honours the
	// retry-after-ms and retry-after headers. 0: [DefaultMaxRetries]; negative:
	// none.
	MaxRetries int
	// HTTPClient sends the requests. Nil: a pool of its own
	// (pkg/httppool, 32 idle connections kept per host) that waits at most
	// 10 minutes for response headers.
	HTTPClient *http.Client
	// Timeout bounds one attempt, from sending the request to reading the end
	// of its stream; an attempt that runs out is retried, so set it above the
	// longest generation expected. Zero: no bound but the caller's context.
	Timeout time.Duration
}

// Client sends model calls to the Messages API with retries, error
// classification, a span and metrics per call. It is safe for concurrent use.
type Client struct {
	api        anthropic.Client
	httpClient *http.Client // the requests' (CloseIdleConnections)
	model      string
	maxRetries int
	secret     string
	log        *slog.Logger
	tracer     trace.Tracer
	metrics    *Metrics
}

// New returns a client for cfg. It logs through log, opens spans with tracer
// and updates m; each may be nil. It returns an error wrapping
// [ErrNoCredential] when cfg has neither credential, and an error when it has
// both, when BaseURL is not an http(s) address, or when a counter vector of m
// does not have the labels [Metrics] names.
func New(cfg Config, log *slog.Logger, tracer trace.Tracer, m *Metrics) (*Client, error) {
	switch {
	case cfg.APIKey == "" && cfg.OAuthToken == "":
		return nil, fmt.Errorf("llm config: %w: set an API key or an OAuth token", ErrNoCredential)
	case cfg.APIKey != "" && cfg.OAuthToken != "":
		return nil, errors.New("llm config: both an API key and an OAuth token are set; set one")
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer("")
	}
	c := &Client{
		model:      cfg.Model,
		maxRetries: cfg.MaxRetries,
		log:        log,
		tracer:     tracer,
		metrics:    m,
	}
	if c.model == "" {
		c.model = DefaultModel
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	c.httpClient = hc

	opts := []option.RequestOption{
		// Without this the SDK reads ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
		// ANTHROPIC_BASE_URL, profiles and more from the environment, and
		// with a key there it sends both credentials.
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(c.maxRetries),
		// The SDK's own spans use the global tracer provider and environment
		// switches that can put prompt content into spans; Send opens its own
		// span with the injected tracer instead.
		option.WithoutOpenTelemetry(),
		option.WithMiddleware(c.middleware),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("llm config: base URL must be an absolute http or https address")
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		c.secret = cfg.APIKey
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	} else {
		c.secret = cfg.OAuthToken
		opts = append(opts, option.WithAuthToken(cfg.OAuthToken), option.WithHeader("anthropic-beta", OAuthBeta))
	}
	if cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	c.api = anthropic.NewClient(opts...)
	return c, nil
}

// CloseIdleConnections closes the idle connections of the client's HTTP
// pool (the service's, once no session is live). Calls in flight keep
// theirs.
func (c *Client) CloseIdleConnections() { c.httpClient.CloseIdleConnections() }

// Model returns the model used for requests that name none.
func (c *Client) Model() string { return c.model }

// defaultHTTPClient returns the client of a Config without one: a pool
// of its own (pkg/httppool: turns running together reuse each other's
// connections to the provider, or to the gateway of LLM_BASE_URL), which
// bounds the wait for response headers.
func defaultHTTPClient() *http.Client {
	pool := httppool.New()
	if t, ok := pool.(*http.Transport); ok {
		t.ResponseHeaderTimeout = defaultResponseHeaderTimeout
	}
	return &http.Client{Transport: pool}
}
