package fake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// DefaultSigningSecret is the signing secret EventsHTTP signs with.
const DefaultSigningSecret = "fake-signing-secret-0123456789abcdef"

// EventsHTTP is the platform's side of the HTTP ingress (the Events API over
// HTTP): it POSTs events, clicks and slash commands to an app's Request
// URLs, signed as the platform signs them.
type EventsHTTP struct {
	// Base is the app's address, such as http://127.0.0.1:8080; the paths
	// are /slack/events, /slack/interactive and /slack/commands.
	Base string
	// Secret signs the requests; default DefaultSigningSecret.
	Secret string
	// Now is the clock of the X-Slack-Request-Timestamp; default time.Now.
	Now func() time.Time
	// Client sends the requests; default a client with a 10 s timeout.
	Client *http.Client
}

// Sign sets the platform's signature headers on r for body:
// X-Slack-Signature = "v0=" + hex(HMAC-SHA256(secret, "v0:" + ts + ":" + body)).
func Sign(h http.Header, secret string, ts time.Time, body []byte) {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", stamp)
	mac.Write(body)
	h.Set("X-Slack-Request-Timestamp", stamp)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}

// Event POSTs an events_api payload (Message{...}.Payload(), or a
// url_verification) to /slack/events; retry > 0 sets X-Slack-Retry-Num as
// the platform's retries do.
func (e EventsHTTP) Event(ctx context.Context, payload json.RawMessage, retry int) (*http.Response, error) {
	return e.Post(ctx, "/slack/events", "application/json", payload, retry)
}

// Interactive POSTs a click (BlockActions{...}.Payload()) to
// /slack/interactive, as the form payload=<json>.
func (e EventsHTTP) Interactive(ctx context.Context, payload json.RawMessage, retry int) (*http.Response, error) {
	body := url.Values{"payload": {string(payload)}}.Encode()
	return e.Post(ctx, "/slack/interactive", "application/x-www-form-urlencoded", []byte(body), retry)
}

// Command POSTs a slash command (SlashCommand{...}.Payload()) to
// /slack/commands, as the form of its fields.
func (e EventsHTTP) Command(ctx context.Context, payload json.RawMessage, retry int) (*http.Response, error) {
	var fields map[string]string
	if err := json.Unmarshal(payload, &fields); err != nil {
		return nil, fmt.Errorf("slash command payload: %w", err)
	}
	form := url.Values{}
	for k, v := range fields {
		form.Set(k, v)
	}
	return e.Post(ctx, "/slack/commands", "application/x-www-form-urlencoded", []byte(form.Encode()), retry)
}

// Post signs body and POSTs it to path; the caller closes the answer's body.
func (e EventsHTTP) Post(ctx context.Context, path, contentType string, body []byte, retry int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	now, secret := time.Now, e.Secret
	if e.Now != nil {
		now = e.Now
	}
	if secret == "" {
		secret = DefaultSigningSecret
	}
	Sign(req.Header, secret, now(), body)
	client := e.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return client.Do(req)
}
