package slackio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

const (
	// slackAckTimeout bounds queueing one ack: the platform counts a delivery as
	// failed after 3 s anyway.
	slackAckTimeout = 3 * time.Second
	// slackRestartDelay separates restarts of slack-go's run loop after it gives
	// up on a connection for a reason other than the token.
	slackRestartDelay = time.Second
)

// ErrSocketAuth is matched (with errors.Is) by the error Run returns when the
// platform refuses the app token: invalid, revoked, not an app-level token,
// or without connections:write.
var ErrSocketAuth = errors.New("socket mode: app token refused")

// slackFatalSocketCodes are the apps.connections.open answers no retry can fix.
var slackFatalSocketCodes = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "not_allowed_token_type": true, "missing_scope": true, "no_permission": true,
}

// socketAuthError is the error of Run when the platform refuses the token;
// its text tells the operator what to check.
type socketAuthError struct {
	code string
	err  error
}

func (e *socketAuthError) Error() string {
	hint := "check CHAT_APP_TOKEN has connections:write and socket mode is enabled"
	if e.code == "not_allowed_token_type" {
		hint = "CHAT_APP_TOKEN must be the app-level xapp- token, not the bot token"
	}
	return "socket mode: " + e.code + " (" + hint + ")"
}

func (e *socketAuthError) Is(target error) bool { return target == ErrSocketAuth }

func (e *socketAuthError) Unwrap() error { return e.err }

// slackErrorCode is the platform's error code in err, or "".
func slackErrorCode(err error) string {
	if resp, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		return resp.Err
	}
	return ""
}

// isNotFound reports whether err is an HTTP 404 from the Web API, which
// slack-go's loop treats as final.
func isNotFound(err error) bool {
	sc, ok := errors.AsType[slack.StatusCodeError](err)
	return ok && sc.Code == http.StatusNotFound
}

// SocketMode is the production gateway.Transport: the platform's Socket
// Mode through slack-go's socketmode client. It drains the client's events
// in a tight loop, acknowledging each envelope before converting and
// delivering it, so that a slow consumer never delays pongs or acks.
type SocketMode struct {
	api       *slack.Client
	log       *slog.Logger
	connected Gauge // nil: not reported
}

// Gauge is what SetConnectedGauge reports to (a Prometheus gauge).
type Gauge interface{ Set(float64) }

// SetConnectedGauge makes Run report its connection on g: 1 from the
// platform's hello until the connection is lost or replaced, 0 while it
// connects, reconnects or has stopped. An operator alerts on a persona
// that hears nothing because its socket is down (the process is up).
// Call it before Run.
func (s *SocketMode) SetConnectedGauge(g Gauge) { s.connected = g }

// setConnected reports the connection's state, when asked to.
func (s *SocketMode) setConnected(up bool) {
	if s.connected == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	s.connected.Set(v)
}

var _ gateway.Transport = (*SocketMode)(nil)

// NewSocketMode returns a gateway.Transport over client, which must carry
// the app-level token (NewClient).
func NewSocketMode(client *slack.Client, log *slog.Logger) *SocketMode {
	if client == nil || log == nil {
		panic("slackio: NewSocketMode needs a client and a logger")
	}
	return &SocketMode{api: client, log: log}
}

// Run implements gateway.Transport. It returns an error matching
// ErrSocketAuth when the platform refuses the app token; transient failures
// are retried with backoff.
func (s *SocketMode) Run(ctx context.Context, deliver func(*pipeline.Event)) error {
	if deliver == nil {
		return errors.New("socket mode: nil deliver")
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.setConnected(false)
	defer s.setConnected(false)
	client := socketmode.New(s.api)
	s.log.InfoContext(ctx, "slack socket mode started")
	for {
		runErr, fatal := s.session(runCtx, cancel, client, deliver)
		s.setConnected(false)
		switch code := slackErrorCode(runErr); {
		case fatal != nil:
			return fatal
		case ctx.Err() != nil:
			return nil
		case slackFatalSocketCodes[code]:
			return &socketAuthError{code: code, err: runErr}
		case isNotFound(runErr):
			return fmt.Errorf("socket mode: apps.connections.open not found (check CHAT_API_URL): %w", runErr)
		case runErr != nil && !errors.Is(runErr, context.Canceled):
			return fmt.Errorf("socket mode: %w", runErr)
		}
		// slack-go's loop ended without a reason we can act on: start over.
		s.log.WarnContext(ctx, "socket mode loop ended, restarting", "err", runErr)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(slackRestartDelay):
		}
	}
}

// session runs slack-go's loop once and handles its events until the loop
// returns. fatal is set when an event showed that retrying cannot help;
// session then cancels the loop through cancel.
func (s *SocketMode) session(ctx context.Context, cancel context.CancelFunc, client *socketmode.Client,
	deliver func(*pipeline.Event)) (runErr, fatal error) {
	done := make(chan error, 1)
	go func() { done <- client.RunContext(ctx) }()
	for {
		select {
		case runErr = <-done:
			return runErr, fatal
		case evt := <-client.Events:
			if err := s.handle(ctx, client, evt, deliver); err != nil && fatal == nil {
				fatal = err
				cancel()
			}
		}
	}
}

// handle deals with one event of the socketmode client.
func (s *SocketMode) handle(ctx context.Context, client *socketmode.Client, evt socketmode.Event,
	deliver func(*pipeline.Event)) error {
	switch evt.Type {
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		if evt.Request != nil {
			s.envelope(ctx, client, evt.Request, deliver)
		}
	case socketmode.EventTypeErrorBadMessage:
		s.badMessage(ctx, client, evt.Data, deliver)
	case socketmode.EventTypeHello:
		attrs := []any{}
		if evt.Request != nil {
			attrs = append(attrs, "app_id", evt.Request.ConnectionInfo.AppID, "num_connections", evt.Request.NumConnections)
		}
		s.log.InfoContext(ctx, "socket ready", attrs...)
		s.setConnected(true)
	case socketmode.EventTypeConnecting:
		// A new connection, also after the platform asked to refresh one
		// (disconnect) or a read failed: none is open until its hello.
		s.setConnected(false)
		if c, ok := evt.Data.(*slack.ConnectingEvent); ok && c.ConnectionCount > 0 && c.Attempt == 1 {
			s.log.InfoContext(ctx, "socket reconnecting", "connection", c.ConnectionCount)
		} else if ok {
			s.log.DebugContext(ctx, "socket connecting", "connection", c.ConnectionCount, "attempt", c.Attempt)
		}
	case socketmode.EventTypeConnectionError:
		ce, ok := evt.Data.(*slack.ConnectionErrorEvent)
		if !ok {
			break
		}
		s.setConnected(false)
		if code := slackErrorCode(ce.ErrorObj); slackFatalSocketCodes[code] {
			return &socketAuthError{code: code, err: ce.ErrorObj}
		}
		s.failed(ctx, "socket connection failed", "attempt", ce.Attempt, "backoff", ce.Backoff.String(), "err", ce.ErrorObj)
	case socketmode.EventTypeConnected:
		if c, ok := evt.Data.(*socketmode.ConnectedEvent); ok {
			s.log.DebugContext(ctx, "socket connected", "connection", c.ConnectionCount)
		}
	case socketmode.EventTypeIncomingError:
		if e, ok := evt.Data.(*slack.IncomingEventError); ok {
			s.failed(ctx, "socket read failed", "err", e.ErrorObj)
		}
	case socketmode.EventTypeErrorWriteFailed:
		if e, ok := evt.Data.(*socketmode.ErrorWriteFailed); ok {
			attrs := []any{"err", e.Cause}
			if e.Response != nil {
				attrs = append(attrs, "envelope_id", e.Response.EnvelopeID)
			}
			s.log.WarnContext(ctx, "socket ack failed", attrs...)
		}
	default:
		s.log.DebugContext(ctx, "socket event ignored", "socket_event", string(evt.Type))
	}
	return nil
}

// failed logs a failure of the connection: a warning, or only a debug
// line once ctx is done, when the connection closes because the runtime
// stops (a clean shutdown warns of nothing).
func (s *SocketMode) failed(ctx context.Context, msg string, attrs ...any) {
	level := slog.LevelWarn
	if ctx.Err() != nil {
		level = slog.LevelDebug
	}
	s.log.Log(ctx, level, msg, attrs...)
}

// envelope converts an envelope, delivers the result and acknowledges
// it: delivery records a message in the durable inbox (one small write),
// so that nothing acknowledged is lost to a crash. Conversion and
// delivery never block, so the ack stays within milliseconds.
func (s *SocketMode) envelope(ctx context.Context, client *socketmode.Client, req *socketmode.Request,
	deliver func(*pipeline.Event)) {
	defer s.ack(ctx, client, req.EnvelopeID, req.Type)
	ev, what, err := convert(payload{kind: req.Type, body: req.Payload, id: req.EnvelopeID,
		retry: req.RetryAttempt, at: time.Now()})
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "socket envelope not understood", "envelope_type", req.Type,
			"envelope_id", req.EnvelopeID, "err", err)
	case ev == nil:
		s.log.DebugContext(ctx, "socket envelope ignored", "envelope_type", req.Type,
			"envelope_id", req.EnvelopeID, "event_type", what)
	default:
		deliver(ev)
	}
}

// badMessage handles a frame slack-go could not parse: an envelope type it
// does not know, or a payload its types reject. The envelope is acked when
// its id can be read, and a payload of a known envelope type gets a second
// chance with this package's own, more lenient decoding.
func (s *SocketMode) badMessage(ctx context.Context, client *socketmode.Client, data any, deliver func(*pipeline.Event)) {
	bad, ok := data.(*socketmode.ErrorBadMessage)
	if !ok {
		s.log.WarnContext(ctx, "socket frame not understood")
		return
	}
	var req socketmode.Request
	if err := json.Unmarshal(bad.Message, &req); err != nil || req.EnvelopeID == "" {
		s.log.WarnContext(ctx, "socket frame not understood", "envelope_type", req.Type, "err", bad.Cause)
		return
	}
	switch req.Type {
	case socketmode.RequestTypeEventsAPI, socketmode.RequestTypeInteractive, socketmode.RequestTypeSlashCommands:
		s.log.DebugContext(ctx, "socket payload rejected by slack-go", "envelope_type", req.Type,
			"envelope_id", req.EnvelopeID, "err", bad.Cause)
		s.envelope(ctx, client, &req, deliver)
	default:
		s.ack(ctx, client, req.EnvelopeID, req.Type)
		s.log.WarnContext(ctx, "socket envelope not understood", "envelope_type", req.Type,
			"envelope_id", req.EnvelopeID, "err", bad.Cause)
	}
}

// ack queues the acknowledgement of an envelope.
func (s *SocketMode) ack(ctx context.Context, client *socketmode.Client, envelopeID, envelopeType string) {
	if envelopeID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, slackAckTimeout)
	defer cancel()
	if err := client.AckCtx(ctx, envelopeID, nil); err != nil {
		s.log.WarnContext(ctx, "socket ack failed", "envelope_type", envelopeType, "envelope_id", envelopeID, "err", err)
	}
}
