package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go/option"
)

// callKey is the context key of a call's *callState.
type callKey struct{}

// callState is what the middleware learns of one call across its attempts.
type callState struct {
	attempts atomic.Int32
	// stream: the call asked for an event stream.
	stream bool
}

// withCall returns ctx carrying st for the middleware.
func withCall(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callKey{}, st)
}

// maxJSONAnswer bounds what the middleware reads of a JSON answer to a stream
// request; a message is far smaller (the API caps output at 128k tokens).
const maxJSONAnswer = 64 << 20

// middleware runs around every attempt the SDK makes: it counts the attempts
// of the call, logs the failed ones, and turns a plain JSON message sent in
// answer to a stream request (as some gateways do) into the event stream the
// SDK expects.
func (c *Client) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	ctx := req.Context()
	st, _ := ctx.Value(callKey{}).(*callState)
	var attempt int
	if st != nil {
		attempt = int(st.attempts.Add(1))
	}
	res, err := next(req)
	switch {
	case err != nil:
		c.log.DebugContext(ctx, "llm attempt failed",
			slog.Int("attempt", attempt), slog.Int("max_attempts", c.maxRetries+1), slog.String("error", c.scrub(err.Error())))
	case retryableStatus(res.StatusCode):
		c.log.WarnContext(ctx, "llm attempt failed",
			slog.Int("attempt", attempt), slog.Int("max_attempts", c.maxRetries+1), slog.Int("status", res.StatusCode),
			slog.String("request_id", res.Header.Get("request-id")))
	case st != nil && st.stream && res.StatusCode == http.StatusOK && isJSON(res.Header):
		return jsonToStream(res)
	}
	return res, err
}

// retryableStatus reports whether the SDK retries an answer with status
// (internal/requestconfig shouldRetry: 408, 409, 429 and every 5xx).
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// isJSON reports whether h declares a JSON body.
func isJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// jsonToStream replaces the JSON message body of res by the two events that
// carry it whole: message_start with the complete message, then message_stop.
// A body that is not a message is left for the stream to reject.
func jsonToStream(res *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(res.Body, maxJSONAnswer))
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	var probe struct {
		Type string `json:"type"`
	}
	var compact bytes.Buffer
	if json.Unmarshal(body, &probe) != nil || probe.Type != "message" || json.Compact(&compact, body) != nil {
		res.Body = io.NopCloser(bytes.NewReader(body))
		return res, nil
	}
	var sse bytes.Buffer
	sse.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":")
	sse.Write(compact.Bytes())
	sse.WriteString("}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	res.Header = res.Header.Clone()
	res.Header.Set("Content-Type", "text/event-stream")
	res.Header.Set("Content-Length", strconv.Itoa(sse.Len()))
	res.ContentLength = int64(sse.Len())
	res.Body = io.NopCloser(&sse)
	return res, nil
}
