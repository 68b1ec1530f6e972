package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// AnthropicDefaultText is the text of the reply the Anthropic fake sends when
// neither its queue nor its Respond function has an answer.
const AnthropicDefaultText = "ok"

// Anthropic is an in-process fake of the Anthropic Messages API: it answers
// GET /v1/models (one model, for credential checks), POST /v1/messages
// (streaming and not) and POST /v1/messages/count_tokens in
// the wire format of the real API, records every request, and fails T on
// anything the real API would reject or the fake does not know: an unknown
// path or method, a missing credential, invalid JSON, or messages that break
// the tool_use/tool_result pairing rule. Those requests are answered as the
// real API answers them (4xx with an error body), so the client under test sees
// the same failure it would see in production.
//
// The zero value is ready to use as an [http.Handler]; [NewAnthropic] also
// starts a server. Set the exported fields before the first request. All
// methods are safe for concurrent use.
type Anthropic struct {
	// T is failed (with Errorf) for every request the fake rejects as a
	// client bug. Nil: such requests are only answered, not reported.
	T testing.TB
	// Respond answers a request that the queue of [Anthropic.Enqueue] does not.
	// It runs on the server's goroutine, one call per request. Nil: the fake
	// replies [TextReply] of [AnthropicDefaultText].
	Respond func(req AnthropicRequest) AnthropicResponse
	// Key, when set, is the only credential the fake accepts (as x-api-key or
	// as a Bearer token); any other is answered 401 authentication_error, as
	// the real API does, without failing T.
	Key string

	mu      sync.Mutex
	queue   []AnthropicResponse
	reqs    []AnthropicRequest
	changed chan struct{} // closed and replaced whenever reqs grows
	closed  chan struct{} // closed by Close: releases gated responses
	seq     int
	srv     *httptest.Server

	modelsCalls int // GET /v1/models, not among reqs
}

// NewAnthropic returns an Anthropic fake reporting to t, served by a started
// [httptest.Server] that is closed when the test ends.
func NewAnthropic(t testing.TB) *Anthropic {
	t.Helper()
	a := &Anthropic{T: t}
	a.srv = httptest.NewServer(a)
	t.Cleanup(a.Close)
	return a
}

// URL returns the base address of the fake's server, without /v1 (what
// option.WithBaseURL and LLM_BASE_URL take), or "" for a fake that
// [NewAnthropic] did not start.
func (a *Anthropic) URL() string {
	if a.srv == nil {
		return ""
	}
	return a.srv.URL
}

// Close releases responses held by a Gate and stops the fake's server, if it
// has one, waiting for the requests in flight. NewAnthropic registers it as a
// test cleanup; calling it again does nothing.
func (a *Anthropic) Close() {
	a.mu.Lock()
	ch := a.closedCh()
	select {
	case <-ch:
	default:
		close(ch)
	}
	a.mu.Unlock()
	if a.srv != nil {
		a.srv.Close()
	}
}

// Enqueue appends responses to the queue; each request takes the first
// queued response, and the queue takes precedence over Respond.
func (a *Anthropic) Enqueue(resp ...AnthropicResponse) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue = append(a.queue, resp...)
}

// Pending returns how many queued responses no request has taken yet.
func (a *Anthropic) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

// Requests returns a copy of the requests recorded so far, in arrival order,
// including the ones the fake rejected.
func (a *Anthropic) Requests() []AnthropicRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]AnthropicRequest(nil), a.reqs...)
}

// WaitRequests blocks until at least n requests have been recorded or ctx is
// done, and returns ctx's error in the latter case.
func (a *Anthropic) WaitRequests(ctx context.Context, n int) error {
	for {
		a.mu.Lock()
		got := len(a.reqs)
		ch := a.changedCh()
		a.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fake anthropic: waiting for %d requests, have %d: %w", n, got, ctx.Err())
		}
	}
}

// changedCh returns the channel closed at the next recorded request; a.mu
// must be held.
func (a *Anthropic) changedCh() chan struct{} {
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

// closedCh returns the channel Close closes; a.mu must be held.
func (a *Anthropic) closedCh() chan struct{} {
	if a.closed == nil {
		a.closed = make(chan struct{})
	}
	return a.closed
}

// record stores req and returns its sequence number, starting at 1.
func (a *Anthropic) record(req AnthropicRequest) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, req)
	a.seq++
	close(a.changedCh())
	a.changed = make(chan struct{})
	return a.seq
}

// next returns the scripted response for req: the queue first, then Respond,
// then the default text reply.
func (a *Anthropic) next(req AnthropicRequest) AnthropicResponse {
	a.mu.Lock()
	if len(a.queue) > 0 {
		resp := a.queue[0]
		a.queue = a.queue[1:]
		a.mu.Unlock()
		return resp
	}
	a.mu.Unlock()
	if a.Respond != nil {
		return a.Respond(req)
	}
	return TextReply(AnthropicDefaultText)
}

// failf reports a client bug to T, if there is one.
func (a *Anthropic) failf(format string, args ...any) {
	if a.T != nil {
		a.T.Errorf("fake anthropic: "+format, args...)
	}
}

// anthMaxBody bounds what the fake reads of a request body. The real API
// rejects requests over 32 MB with 413 request_too_large.
const anthMaxBody = 32 << 20

// ServeHTTP answers one request as the Messages API would.
func (a *Anthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/models" && r.Method == http.MethodGet {
		a.serveModels(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, anthMaxBody+1))
	req := AnthropicRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if err == nil && len(body) <= anthMaxBody {
		req.parse()
	}
	seq := a.record(req)
	reqID := fmt.Sprintf("req_fake_%04d", seq)
	w.Header().Set("request-id", reqID)

	switch {
	case err != nil:
		anthWriteError(w, reqID, http.StatusBadRequest, "invalid_request_error", "could not read request body")
		return
	case len(body) > anthMaxBody:
		a.failf("%s %s: body over %d bytes", r.Method, r.URL.Path, anthMaxBody)
		anthWriteError(w, reqID, http.StatusRequestEntityTooLarge, "request_too_large", "Request exceeds the maximum allowed number of bytes.")
		return
	}

	var countTokens bool
	switch r.URL.Path {
	case "/v1/messages":
	case "/v1/messages/count_tokens":
		countTokens = true
	default:
		a.failf("%s %s: unknown path", r.Method, r.URL.Path)
		anthWriteError(w, reqID, http.StatusNotFound, "not_found_error", "Not Found")
		return
	}
	if r.Method != http.MethodPost {
		a.failf("%s %s: method not allowed", r.Method, r.URL.Path)
		anthWriteError(w, reqID, http.StatusMethodNotAllowed, "invalid_request_error", "Method Not Allowed")
		return
	}
	if status, typ, msg, bug := a.checkAuth(r.Header); status != 0 {
		if bug {
			a.failf("%s %s: %s", r.Method, r.URL.Path, msg)
		}
		anthWriteError(w, reqID, status, typ, msg)
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		a.failf("%s %s: missing anthropic-version header", r.Method, r.URL.Path)
		anthWriteError(w, reqID, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	if msg := anthValidate(body, !countTokens); msg != "" {
		a.failf("%s %s: %s", r.Method, r.URL.Path, msg)
		anthWriteError(w, reqID, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}

	if countTokens {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"input_tokens": anthEstimateInput(req)})
		return
	}

	resp := a.next(req)
	if resp.Gate != nil {
		a.mu.Lock()
		closed := a.closedCh()
		a.mu.Unlock()
		select {
		case <-resp.Gate:
		case <-closed:
		case <-r.Context().Done():
			return
		}
	}
	a.reply(w, req, resp, seq, reqID)
}

// checkAuth applies the real API's credential rules. It returns a zero status
// for an accepted request; bug reports whether the refusal is a client bug
// rather than a wrong credential.
func (a *Anthropic) checkAuth(h http.Header) (status int, typ, msg string, bug bool) {
	key := h.Get("x-api-key")
	authz := h.Get("Authorization")
	token, bearer := strings.CutPrefix(authz, "Bearer ")
	switch {
	case key != "" && authz != "":
		return http.StatusUnauthorized, "authentication_error", "both x-api-key and Authorization headers sent", true
	case key == "" && authz == "":
		return http.StatusUnauthorized, "authentication_error", "x-api-key header is required", true
	case authz != "" && (!bearer || token == ""):
		return http.StatusUnauthorized, "authentication_error", "invalid Authorization header", true
	case bearer && strings.HasPrefix(token, "sk-ant-oat") && !anthHasBeta(h, "oauth-2025-04-20"):
		return http.StatusUnauthorized, "authentication_error", "OAuth authentication is currently not supported.", true
	}
	if a.Key != "" && key != a.Key && token != a.Key {
		return http.StatusUnauthorized, "authentication_error", "invalid x-api-key", false
	}
	return 0, "", "", false
}

// anthHasBeta reports whether the anthropic-beta headers of h list beta.
func anthHasBeta(h http.Header, beta string) bool {
	for _, v := range h.Values("anthropic-beta") {
		for b := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// reply writes resp for req: an error, a JSON message or an event stream.
func (a *Anthropic) reply(w http.ResponseWriter, req AnthropicRequest, resp AnthropicResponse, seq int, reqID string) {
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.RetryAfter != "" {
		w.Header().Set("retry-after", resp.RetryAfter)
	}
	if resp.RetryAfterMs != "" {
		w.Header().Set("retry-after-ms", resp.RetryAfterMs)
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		anthWriteError(w, reqID, resp.Status, resp.ErrorType, resp.ErrorMessage)
		return
	}
	if resp.StreamErrorType != "" && !req.Stream {
		anthWriteError(w, reqID, anthStatusOf(resp.StreamErrorType), resp.StreamErrorType, resp.StreamErrorMessage)
		return
	}
	msg, err := anthBuildMessage(req, resp, seq)
	if err != nil {
		a.failf("scripted response: %v", err)
		anthWriteError(w, reqID, http.StatusInternalServerError, "api_error", "Internal server error")
		return
	}
	if !req.Stream || resp.NoStream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	anthStream(w, msg, resp)
}

// anthWriteError writes the real API's error body.
func anthWriteError(w http.ResponseWriter, reqID string, status int, typ, msg string) {
	if typ == "" {
		typ = anthTypeOf(status)
	}
	if msg == "" {
		msg = anthDefaultMessage(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(anthErrorBody(typ, msg, reqID))
}

// anthErrorBody is the JSON of an error response or error event.
func anthErrorBody(typ, msg, reqID string) map[string]any {
	body := map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	}
	if reqID != "" {
		body["request_id"] = reqID
	}
	return body
}

// anthDefaultMessage returns the message of an error the script gave none.
func anthDefaultMessage(status int) string {
	if status == 529 {
		return "Overloaded"
	}
	if text := http.StatusText(status); text != "" {
		return text
	}
	return "Error"
}

// anthTypeOf returns the error type the real API pairs with status.
func anthTypeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// anthStatusOf returns the status the real API pairs with an error type.
func anthStatusOf(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	default:
		return http.StatusInternalServerError
	}
}

// serveModels answers GET /v1/models (the credential check at start and in
// `agent doctor`) with one model, or the credential's refusal. It is not
// one of Requests: tests count model calls.
func (a *Anthropic) serveModels(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.modelsCalls++
	a.mu.Unlock()
	reqID := "req_fake_models"
	w.Header().Set("request-id", reqID)
	if status, typ, msg, bug := a.checkAuth(r.Header); status != 0 {
		if bug {
			a.failf("%s %s: %s", r.Method, r.URL.Path, msg)
		}
		anthWriteError(w, reqID, status, typ, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"data":[{"type":"model","id":"claude-test","display_name":"Claude Test","created_at":"2025-01-01T00:00:00Z"}],"has_more":false,"first_id":"claude-test","last_id":"claude-test"}`)
}

// ModelsCalls is how many times GET /v1/models was called.
func (a *Anthropic) ModelsCalls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.modelsCalls
}
