package slackio

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/httppool"
)

const (
	// slackRetries is how often a Web API call rate limited with 429 and
	// Retry-After is retried: the platform allows bursts but ~1 post/s per
	// channel, so a few waits clear a burst.
	slackRetries = 3
	// slackHTTPTimeout bounds a Web API call when the caller's context
	// does not: uploads of a few MB finish well inside it.
	slackHTTPTimeout = 60 * time.Second
)

// platformTransport is the connection pool of the Web API calls that name
// no transport of their own (a client whose Transport is nil, the status
// line's JSON call): one pool for them all (pkg/httppool), as
// DefaultTransport would be, so the calls of one thread reuse each
// other's connections.
var platformTransport = sync.OnceValue(httppool.New)

// CloseIdleConnections closes the idle connections of platformTransport,
// the pool of the Web API calls that name no transport of their own (the
// service's, once no session is live). Calls in flight keep theirs.
func (c *Chat) CloseIdleConnections() { httppool.CloseIdle(platformTransport()) }

// NewClient returns the Web API client that the socket and the chat
// calls share. apiURL is the Web API base (CHAT_API_URL; "" means the
// platform's own); a missing final "/" is added, as slack-go needs it.
// httpClient nil means a client with a 60 s timeout; a client with no
// Transport gets platformTransport (not http.DefaultTransport). Calls
// answered 429 are retried after the platform's Retry-After, except the
// reads of the chat tools, which wait on their own terms (read.go). A call
// whose context carries an answer check (withAnswerCheck: a file
// download) has the answer's headers checked before its body is read. A
// redirect carries the bot token only to the platform's hosts and
// apiURL's (tokenRedirects). opts are applied last.
func NewClient(botToken, appToken, apiURL string, httpClient *http.Client, opts ...slack.Option) *slack.Client {
	if apiURL == "" {
		apiURL = slack.APIURL
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: slackHTTPTimeout}
	}
	// A copy: the caller's client keeps its own redirect policy.
	hc := *httpClient
	if hc.Transport == nil {
		hc.Transport = platformTransport()
	}
	api, _ := url.Parse(apiURL) // nil (no host gets the token but the platform's) when it does not parse
	hc.CheckRedirect = tokenRedirects(api, httpClient.CheckRedirect)
	httpClient = &hc
	return slack.New(botToken, append([]slack.Option{
		slack.OptionAppLevelToken(appToken),
		slack.OptionAPIURL(apiURL),
		slack.OptionHTTPClient(answerChecks{next: httpClient}),
		// After OptionHTTPClient: it wraps the client set there.
		slack.OptionRetryConfig(retryConfig()),
	}, opts...)...)
}

// retryConfig is slack-go's OptionRetry(slackRetries): 429s retried after
// Retry-After, but not those of a call whose caller waits itself.
func retryConfig() slack.RetryConfig {
	cfg := slack.DefaultRetryConfig()
	cfg.MaxRetries = slackRetries
	cfg.Handlers = []slack.RetryHandler{unlessWaitsItself{slack.NewRateLimitErrorRetryHandler(cfg)}}
	return cfg
}

// unlessWaitsItself is next, except for the requests whose caller waits
// out the rate limit itself (waitsItself): their 429 goes back at once.
type unlessWaitsItself struct{ next slack.RetryHandler }

func (h unlessWaitsItself) ShouldRetry(s *slack.RetryState, req *http.Request, resp *http.Response, err error) (bool, time.Duration) {
	if waitsItself(req) {
		return false, 0
	}
	return h.next.ShouldRetry(s, req, resp, err)
}

// doer is what slack-go calls to send a request (its httpClient).
type doer interface {
	Do(*http.Request) (*http.Response, error)
}

// answerCheck judges the headers of a successful answer; an error refuses
// the answer, whose body is then never read.
type answerCheck func(h http.Header) error

type answerCheckKey struct{}

// withAnswerCheck returns ctx carrying check for the calls made with it.
// slack-go's file download hands its caller nothing but the body, and
// copies that to the caller's writer at once: the answer's type can only
// be seen on the way, here.
func withAnswerCheck(ctx context.Context, check answerCheck) context.Context {
	return context.WithValue(ctx, answerCheckKey{}, check)
}

// answerChecks runs the answer check of a request's context (if any) on
// its final answer (after redirects). A refused answer is closed and its
// error returned as the call's: not a connection error, so slack-go's
// retries leave it alone.
type answerChecks struct{ next doer }

func (c answerChecks) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if check, ok := req.Context().Value(answerCheckKey{}).(answerCheck); ok {
		if err := check(resp.Header); err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
	}
	return resp, nil
}
