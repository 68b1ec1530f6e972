package slackio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Paths of the HTTP ingress, as the app's manifest names them
// (Request URLs of Event Subscriptions, Interactivity and each slash command).
const (
	PathEvents      = "/slack/events"
	PathInteractive = "/slack/interactive"
	PathCommands    = "/slack/commands"
)

// httpIngressMaxBody bounds a request body: the platform's payloads are a
// few KB (a message with blocks and files stays far under).
const httpIngressMaxBody = 1 << 20

// HTTPIngress is the gateway.Transport of the platform's Events API over
// HTTP: the platform POSTs each event, click and slash command to the
// routes of Handler, signed with the app's signing secret. Every request is
// verified (slack-go's SecretsVerifier: the HMAC of the body and a
// timestamp no more than 5 minutes off), converted as a socket-mode
// envelope is (convert) and delivered;
// the answer (200 with an empty body) follows at once, whatever the turn
// takes, well inside the platform's 3 s. Retries (X-Slack-Retry-Num) carry
// the same event id and are delivered with Retry set, so the drop filter
// refuses them as it refuses socket redeliveries.
type HTTPIngress struct {
	secret string
	log    *slog.Logger

	mu      sync.RWMutex
	deliver func(*pipeline.Event) // nil: not running; requests get 503
}

var _ gateway.Transport = (*HTTPIngress)(nil)

// NewHTTPIngress returns the HTTP transport verifying requests with the
// app's signing secret (CHAT_SIGNING_SECRET).
func NewHTTPIngress(signingSecret string, log *slog.Logger) *HTTPIngress {
	if signingSecret == "" || log == nil {
		panic("slackio: NewHTTPIngress needs a signing secret and a logger")
	}
	return &HTTPIngress{secret: signingSecret, log: log}
}

// Routes adds the three routes to r: the service's HTTP server (the health
// port's, or AGENT_HTTP_PORT's of its own).
func (h *HTTPIngress) Routes(r chi.Router) {
	r.Post(PathEvents, h.serve(events))
	r.Post(PathInteractive, h.serve(interactive))
	r.Post(PathCommands, h.serve(commands))
}

// Handler serves the three routes alone.
func (h *HTTPIngress) Handler() http.Handler {
	r := chi.NewRouter()
	h.Routes(r)
	return r
}

// Run implements gateway.Transport: requests are delivered from now until
// ctx is done; before and after, they are answered 503 so that the
// platform retries them (on another replica behind a load balancer).
func (h *HTTPIngress) Run(ctx context.Context, deliver func(*pipeline.Event)) error {
	if deliver == nil {
		return errors.New("http ingress: nil deliver")
	}
	h.mu.Lock()
	h.deliver = deliver
	h.mu.Unlock()
	h.log.InfoContext(ctx, "http ingress started", "paths", []string{PathEvents, PathInteractive, PathCommands})
	<-ctx.Done()
	h.mu.Lock()
	h.deliver = nil
	h.mu.Unlock()
	return nil
}

// route reads the body of one verified request into the payload to
// convert (kind "" or unknown: nothing to deliver), or into reply, a JSON
// answer of its own (url_verification's challenge).
type route func(body []byte) (p payload, reply any, err error)

// serve verifies a request, reads it with read, converts and delivers the
// event, then answers. Nothing waits on the turn.
func (h *HTTPIngress) serve(read route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpIngressMaxBody))
		if err != nil {
			h.log.WarnContext(ctx, "http ingress: body not read", "path", r.URL.Path, "err", err)
			http.Error(w, "body not read", http.StatusBadRequest)
			return
		}
		if err := h.verify(r.Header, body); err != nil {
			// Never handled: a forged or replayed request is only logged.
			h.log.WarnContext(ctx, "http ingress: request refused", "path", r.URL.Path,
				"remote", r.RemoteAddr, "reason", err.Error())
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		p, reply, err := read(body)
		var ev *pipeline.Event
		var what string
		if err == nil && reply == nil {
			p.at = time.Now()
			if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
				p.retry, _ = strconv.Atoi(n)
			}
			ev, what, err = convert(p)
		}
		if err != nil {
			// Acknowledged all the same: a retry would not be understood
			// better.
			h.log.WarnContext(ctx, "http ingress: payload not understood", "path", r.URL.Path, "err", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		if ev != nil {
			h.mu.RLock()
			deliver := h.deliver
			if deliver != nil {
				// Delivery records the event in the durable inbox before the
				// answer below acknowledges it, as socket mode does.
				deliver(ev)
			}
			h.mu.RUnlock()
			if deliver == nil {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "not taking events", http.StatusServiceUnavailable)
				return
			}
		} else if what != "" {
			h.log.DebugContext(ctx, "http ingress: payload ignored", "path", r.URL.Path, "type", what)
		}
		if reply != nil {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(reply)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
}

// payloadDigest names a request by its body: the platform's retries of a
// request repeat it.
func payloadDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "http-" + hex.EncodeToString(sum[:12])
}

// verify checks the request's signature and timestamp.
func (h *HTTPIngress) verify(header http.Header, body []byte) error {
	v, err := slack.NewSecretsVerifier(header, h.secret)
	if err != nil {
		return err
	}
	if _, err := v.Write(body); err != nil {
		return err
	}
	return v.Ensure()
}

// events reads the Events API: url_verification when the Request URL is
// set, event_callback for every event.
func events(body []byte) (payload, any, error) {
	var head struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return payload{}, nil, err
	}
	if head.Type == "url_verification" {
		return payload{}, map[string]string{"challenge": head.Challenge}, nil
	}
	return payload{kind: socketmode.RequestTypeEventsAPI, body: body}, nil, nil
}

// interactive reads clicks: a form whose payload field is the JSON. With
// no trigger id the event id falls back to a digest of the request, the
// same in the platform's retries of it.
func interactive(body []byte) (payload, any, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return payload{}, nil, err
	}
	p := form.Get("payload")
	if p == "" {
		return payload{}, nil, errors.New("interactive request without a payload")
	}
	return payload{kind: socketmode.RequestTypeInteractive, body: json.RawMessage(p), id: payloadDigest(body)}, nil, nil
}

// commands reads slash commands: a form of the fields socket mode's
// payload holds as JSON.
func commands(body []byte) (payload, any, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return payload{}, nil, err
	}
	if form.Get("ssl_check") == "1" {
		// The platform checking the certificate of a command's URL.
		return payload{kind: "ssl_check"}, nil, nil
	}
	fields := make(map[string]string, len(form))
	for k := range form {
		fields[k] = form.Get(k)
	}
	js, err := json.Marshal(fields)
	if err != nil {
		return payload{}, nil, err
	}
	return payload{kind: socketmode.RequestTypeSlashCommands, body: js, id: payloadDigest(body)}, nil, nil
}
