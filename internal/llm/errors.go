package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
)

// The classes of failure a call can end with. Errors returned by [Client.Send]
// and [Client.CountTokens] match at most one of ErrUnavailable, ErrAuth and
// ErrInvalidRequest with [errors.Is]; ErrContextTooLong comes with
// ErrInvalidRequest.
var (
	// ErrUnavailable: the provider could not answer, and it is not the
	// request's fault: overloaded (529), rate limited (429), a 5xx, a timeout,
	// a connection that failed or a stream that broke off, once retries are
	// exhausted. Trying again later may succeed.
	ErrUnavailable = errors.New("llm: provider unavailable")
	// ErrAuth: the provider refused the credential (401) or its permissions (403).
	ErrAuth = errors.New("llm: authentication failed")
	// ErrInvalidRequest: the provider refused the request itself (400, 404,
	// 413); sending it again fails the same way.
	ErrInvalidRequest = errors.New("llm: invalid request")
	// ErrContextTooLong: the request is over the model's context window ("prompt
	// is too long") or the API's size limit (413); shortening the history helps.
	ErrContextTooLong = errors.New("llm: prompt is too long")
	// ErrNoCredential: [New] was given neither an API key nor an OAuth token.
	ErrNoCredential = errors.New("llm: no credential")
)

// Error is a failed model call. Its message holds the operation, the
// provider's error type, status and message, and never the credential.
type Error struct {
	// Op is the operation: "messages" or "count_tokens".
	Op string
	// Status is the HTTP status of the answer; 200 for an error event in a
	// stream, 0 when no answer arrived.
	Status int
	// Type is the provider's error type (overloaded_error, ...), if it sent one.
	Type string
	// Message is the provider's error message, or what went wrong locally.
	Message string
	// RequestID is the provider's request-id, if it sent one.
	RequestID string
	// Attempts is how many requests the call sent, retries included.
	Attempts int

	kinds []error // the sentinels the error matches
	err   error   // the underlying error, if any
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	switch {
	case e.Type != "" && e.Status == http.StatusOK:
		fmt.Fprintf(&b, "%s (in stream): ", e.Type)
	case e.Type != "" && e.Status != 0:
		fmt.Fprintf(&b, "%s (%d): ", e.Type, e.Status)
	case e.Type != "":
		fmt.Fprintf(&b, "%s: ", e.Type)
	case e.Status != 0:
		fmt.Fprintf(&b, "status %d: ", e.Status)
	}
	b.WriteString(e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request-id %s)", e.RequestID)
	}
	return b.String()
}

// Unwrap returns the sentinels the error matches and the underlying error.
func (e *Error) Unwrap() []error {
	out := append([]error(nil), e.kinds...)
	if e.err != nil {
		out = append(out, e.err)
	}
	return out
}

// outcome returns the metric label for err: ok, canceled, unavailable, auth,
// context_too_long, invalid_request or error.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable):
		return "canceled"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrAuth):
		return "auth"
	case errors.Is(err, ErrContextTooLong):
		return "context_too_long"
	case errors.Is(err, ErrInvalidRequest):
		return "invalid_request"
	default:
		return "error"
	}
}

// convert turns an error of the SDK into the error Send returns. ctx is the
// caller's context: once it is done, its error is what the call ended with.
// st tells whether any request was sent.
func (c *Client) convert(ctx context.Context, op string, st *callState, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("llm %s: %w", op, ctxErr)
	}
	if st.attempts.Load() == 0 {
		// The SDK failed before sending anything: the params could not be
		// encoded. Sending them again fails the same way.
		return &Error{Op: op, Message: "build request: " + c.scrub(err.Error()), kinds: []error{ErrInvalidRequest}, err: err}
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		e := &Error{
			Op:        op,
			Status:    apiErr.StatusCode,
			Type:      string(apiErr.Type()),
			Message:   c.scrub(apiMessage(apiErr)),
			RequestID: apiErr.RequestID,
			err:       err,
		}
		e.kinds = classify(e.Status, e.Type, e.Message)
		return e
	}
	// No answer from the provider: a connection that failed, an attempt that
	// timed out, a body that broke off. Not the request's fault.
	return &Error{Op: op, Message: c.scrub(err.Error()), kinds: []error{ErrUnavailable}, err: err}
}

// apiMessage returns the message of the provider's error body, or the status
// text when the body has none.
func apiMessage(e *anthropic.Error) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(e.RawJSON()), &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	if raw := strings.TrimSpace(e.RawJSON()); raw != "" {
		return raw
	}
	return http.StatusText(e.StatusCode)
}

// classify returns the sentinels an API error of status, type typ and
// message msg matches. The type decides when it is a known one, since an error
// event inside a stream comes with status 200.
func classify(status int, typ, msg string) []error {
	invalid := func(tooLong bool) []error {
		if tooLong || strings.Contains(strings.ToLower(msg), "prompt is too long") {
			return []error{ErrInvalidRequest, ErrContextTooLong}
		}
		return []error{ErrInvalidRequest}
	}
	switch typ {
	case "overloaded_error", "rate_limit_error", "api_error", "timeout_error":
		return []error{ErrUnavailable}
	case "authentication_error", "permission_error":
		return []error{ErrAuth}
	case "request_too_large":
		return invalid(true)
	case "invalid_request_error", "not_found_error":
		return invalid(false)
	}
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return []error{ErrAuth}
	case status == http.StatusRequestEntityTooLarge:
		return invalid(true)
	case status == http.StatusBadRequest, status == http.StatusNotFound, status == http.StatusUnprocessableEntity:
		return invalid(false)
	case status == http.StatusRequestTimeout, status == http.StatusConflict,
		status == http.StatusTooManyRequests, status >= http.StatusInternalServerError:
		return []error{ErrUnavailable}
	}
	return nil
}

// scrub removes the credential from s.
func (c *Client) scrub(s string) string {
	if c.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, c.secret, "[redacted]")
}
