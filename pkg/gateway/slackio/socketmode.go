package slackio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

const (
	// slackRetries is how often a Web API call rate limited with 429 and
	// Retry-After is retried: the platform allows bursts but ~1 post/s per
	// channel, so a few waits clear a burst.
	slackRetries = 3
	// slackHTTPTimeout bounds a Web API call when the caller's context
	// does not: uploads of a few MB finish well inside it.
	slackHTTPTimeout = 60 * time.Second
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

// NewClient returns the Web API client that the socket and the chat
// calls share. apiURL is the Web API base (CHAT_API_URL; "" means the
// platform's own); a missing final "/" is added, as slack-go needs it.
// httpClient nil means a client with a 60 s timeout. Calls answered 429 are
// retried after the platform's Retry-After. opts are applied last.
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
	return slack.New(botToken, append([]slack.Option{
		slack.OptionAppLevelToken(appToken),
		slack.OptionAPIURL(apiURL),
		slack.OptionHTTPClient(httpClient),
		// After OptionHTTPClient: it wraps the client set there.
		slack.OptionRetry(slackRetries),
	}, opts...)...)
}

// SocketMode is the production Transport: the platform's Socket Mode through
// slack-go's socketmode client. It drains the client's events in a tight
// loop, acknowledging each envelope before converting and delivering it, so
// that a slow consumer never delays pongs or acks.
type SocketMode struct {
	api *slack.Client
	log *slog.Logger
}

var _ gateway.Transport = (*SocketMode)(nil)

// NewSocketMode returns a Transport over client, which must carry the
// app-level token (NewClient).
func NewSocketMode(client *slack.Client, log *slog.Logger) *SocketMode {
	if client == nil || log == nil {
		panic("slackio: NewSocketMode needs a client and a logger")
	}
	return &SocketMode{api: client, log: log}
}

// Run implements Transport. It returns an error matching ErrSocketAuth when
// the platform refuses the app token; transient failures are retried with
// backoff.
func (s *SocketMode) Run(ctx context.Context, deliver func(*pipeline.Event)) error {
	if deliver == nil {
		return errors.New("socket mode: nil deliver")
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := socketmode.New(s.api)
	s.log.InfoContext(ctx, "slack socket mode started")
	for {
		runErr, fatal := s.session(runCtx, cancel, client, deliver)
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
	case socketmode.EventTypeConnecting:
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
	ev, what, err := convertEnvelope(req, time.Now())
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

// Wire shapes of the payloads, decoded leniently: only the fields the
// pipeline uses, so that a field slack-go's types reject cannot cost a
// delivery.
type (
	wireEventsAPI struct {
		Type    string          `json:"type"`
		TeamID  string          `json:"team_id"`
		EventID string          `json:"event_id"`
		Event   json.RawMessage `json:"event"`
	}
	wireMessage struct {
		Type        string       `json:"type"`
		Subtype     string       `json:"subtype"`
		Team        string       `json:"team"`
		Channel     string       `json:"channel"`
		ChannelType string       `json:"channel_type"`
		User        string       `json:"user"`
		BotID       string       `json:"bot_id"`
		TS          string       `json:"ts"`
		ThreadTS    string       `json:"thread_ts"`
		ParentUser  string       `json:"parent_user_id"`
		Text        string       `json:"text"`
		Files       []wireFile   `json:"files"`
		Message     *wireMessage `json:"message"` // message_changed: the message as edited
	}
	wireFile struct {
		ID                 string `json:"id"`
		Name               string `json:"name"`
		MimeType           string `json:"mimetype"`
		Size               int64  `json:"size"`
		URLPrivate         string `json:"url_private"`
		URLPrivateDownload string `json:"url_private_download"`
	}
	wireInteraction struct {
		Type        string `json:"type"`
		TriggerID   string `json:"trigger_id"`
		ResponseURL string `json:"response_url"`
		User        struct {
			ID string `json:"id"`
		} `json:"user"`
		Team *struct {
			ID string `json:"id"`
		} `json:"team"`
		Channel *struct {
			ID string `json:"id"`
		} `json:"channel"`
		Container struct {
			MessageTS string `json:"message_ts"`
			ChannelID string `json:"channel_id"`
			ThreadTS  string `json:"thread_ts"`
		} `json:"container"`
		Message *struct {
			ThreadTS string `json:"thread_ts"`
		} `json:"message"`
		Actions []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"actions"`
	}
	wireCommand struct {
		TeamID      string `json:"team_id"`
		ChannelID   string `json:"channel_id"`
		UserID      string `json:"user_id"`
		Command     string `json:"command"`
		Text        string `json:"text"`
		ResponseURL string `json:"response_url"`
		TriggerID   string `json:"trigger_id"`
	}
)

// convertEnvelope turns an envelope into a pipeline event. A nil event with
// a nil error is an envelope the pipeline has no use for; what then names
// its payload type, for the logs.
func convertEnvelope(req *socketmode.Request, now time.Time) (ev *pipeline.Event, what string, err error) {
	switch req.Type {
	case socketmode.RequestTypeEventsAPI:
		ev, what, err = convertEventsAPI(req.Payload)
	case socketmode.RequestTypeInteractive:
		ev, what, err = convertInteraction(req.Payload, req.EnvelopeID)
	case socketmode.RequestTypeSlashCommands:
		ev, what, err = convertCommand(req.Payload, req.EnvelopeID)
	default:
		return nil, req.Type, nil
	}
	if ev != nil {
		ev.Retry = req.RetryAttempt
		ev.Received = now
	}
	return ev, what, err
}

// convertEventsAPI converts app_mention and message events; other event
// types are ignored. Message subtypes (edits, deletions, bots' posts) are
// delivered with Subtype set: the drop stage decides.
func convertEventsAPI(payload json.RawMessage) (*pipeline.Event, string, error) {
	var outer wireEventsAPI
	if err := json.Unmarshal(payload, &outer); err != nil {
		return nil, "", fmt.Errorf("decode events_api payload: %w", err)
	}
	if outer.Type != "event_callback" {
		return nil, outer.Type, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(outer.Event, &head); err != nil {
		return nil, "", fmt.Errorf("decode event: %w", err)
	}
	if head.Type != "app_mention" && head.Type != "message" {
		return nil, head.Type, nil
	}
	var m wireMessage
	if err := json.Unmarshal(outer.Event, &m); err != nil {
		return nil, head.Type, fmt.Errorf("decode %s event: %w", head.Type, err)
	}
	ev := &pipeline.Event{
		ID: outer.EventID, Kind: pipeline.KindMessage, Type: m.Type, Subtype: m.Subtype,
		TeamID: outer.TeamID, ChannelID: m.Channel, ChannelType: m.ChannelType,
		UserID: m.User, BotID: m.BotID, TS: m.TS, ThreadTS: m.ThreadTS, ParentUserID: m.ParentUser, Text: m.Text,
		Files: convertFiles(m.Files),
	}
	if ev.TeamID == "" {
		ev.TeamID = m.Team
	}
	if ev.ChannelType == "" {
		ev.ChannelType = gateway.ChannelType(m.Channel)
	}
	if m.Subtype == "message_changed" && m.Message != nil {
		// The person and words are those of the edited message.
		e := m.Message
		ev.UserID, ev.BotID, ev.Text, ev.ThreadTS, ev.Files = e.User, e.BotID, e.Text, e.ThreadTS, convertFiles(e.Files)
		ev.ParentUserID = e.ParentUser
		if e.TS != "" {
			ev.TS = e.TS
		}
	}
	return ev, head.Type, nil
}

func convertFiles(in []wireFile) []pipeline.File {
	if len(in) == 0 {
		return nil
	}
	out := make([]pipeline.File, len(in))
	for i, f := range in {
		url := f.URLPrivateDownload
		if url == "" {
			url = f.URLPrivate
		}
		out[i] = pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Size: f.Size, URL: url}
	}
	return out
}

// convertInteraction converts a click on a button (block_actions); other
// interactions are ignored. The event id is synthesised from the trigger id,
// unique per click and the same in a redelivery.
func convertInteraction(payload json.RawMessage, envelopeID string) (*pipeline.Event, string, error) {
	var p wireInteraction
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, "", fmt.Errorf("decode interactive payload: %w", err)
	}
	if p.Type != "block_actions" || len(p.Actions) == 0 {
		return nil, p.Type, nil
	}
	channel := p.Container.ChannelID
	if channel == "" && p.Channel != nil {
		channel = p.Channel.ID
	}
	thread := p.Container.ThreadTS
	if thread == "" && p.Message != nil {
		thread = p.Message.ThreadTS
	}
	ev := &pipeline.Event{
		ID: "action:" + slackFirstNonEmpty(p.TriggerID, envelopeID), Kind: pipeline.KindAction, Type: p.Type,
		ChannelID: channel, ChannelType: gateway.ChannelType(channel), UserID: p.User.ID,
		TS: p.Container.MessageTS, ThreadTS: thread,
		Action: &pipeline.Action{ActionID: p.Actions[0].ActionID, Value: p.Actions[0].Value,
			MessageTS: p.Container.MessageTS, ResponseURL: p.ResponseURL},
	}
	if p.Team != nil {
		ev.TeamID = p.Team.ID
	}
	return ev, p.Type, nil
}

// convertCommand converts a slash command. The platform sends no thread
// with it: it applies to the channel or DM where it was typed.
func convertCommand(payload json.RawMessage, envelopeID string) (*pipeline.Event, string, error) {
	var c wireCommand
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, "", fmt.Errorf("decode slash command: %w", err)
	}
	ev, err := commandEvent(c, envelopeID)
	return ev, "slash_command", err
}

// commandEvent is the pipeline event of a slash command, whichever way it
// came (a socket envelope's JSON, an HTTP form). fallbackID names it when
// the platform gave no trigger id.
func commandEvent(c wireCommand, fallbackID string) (*pipeline.Event, error) {
	if c.Command == "" {
		return nil, errors.New("slash command without a command")
	}
	return &pipeline.Event{
		ID: "command:" + slackFirstNonEmpty(c.TriggerID, fallbackID), Kind: pipeline.KindCommand, Type: "slash_command",
		TeamID: c.TeamID, ChannelID: c.ChannelID, ChannelType: gateway.ChannelType(c.ChannelID), UserID: c.UserID,
		Text:    strings.TrimSpace(c.Command + " " + c.Text),
		Command: &pipeline.Command{Name: c.Command, Args: strings.TrimSpace(c.Text), ResponseURL: c.ResponseURL, TriggerID: c.TriggerID},
	}, nil
}

func slackFirstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
