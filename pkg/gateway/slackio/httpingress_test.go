package slackio

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// ingressRig is an HTTPIngress served by httptest, running, with the
// events it delivered.
type ingressRig struct {
	platform fake.EventsHTTP
	logs     *logRecorder
	mu       sync.Mutex
	events   []*pipeline.Event
}

func newIngressRig(t *testing.T, run bool) *ingressRig {
	t.Helper()
	rig := &ingressRig{logs: newLogRecorder()}
	in := NewHTTPIngress(fake.DefaultSigningSecret, slog.New(rig.logs))
	srv := httptest.NewServer(in.Handler())
	t.Cleanup(srv.Close)
	rig.platform = fake.EventsHTTP{Base: srv.URL}
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		started := make(chan struct{})
		go func() {
			done <- in.Run(ctx, func(ev *pipeline.Event) {
				rig.mu.Lock()
				rig.events = append(rig.events, ev)
				rig.mu.Unlock()
			})
		}()
		go func() {
			// Run is taking events once its start line is logged.
			if _, err := rig.logs.wait(ctx, "http ingress started"); err == nil {
				close(started)
			}
		}()
		select {
		case <-started:
		case <-time.After(waitTimeout):
			t.Fatal("ingress did not start")
		}
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	return rig
}

func (r *ingressRig) delivered() []*pipeline.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pipeline.Event(nil), r.events...)
}

// readAnswer reads a response: status and body (0 and the error when there
// was none).
func readAnswer(resp *http.Response, err error) (int, string) {
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPIngressURLVerification(t *testing.T) {
	rig := newIngressRig(t, true)
	body := json.RawMessage(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	code, got := readAnswer(rig.platform.Event(t.Context(), body, 0))
	if code != http.StatusOK || strings.TrimSpace(got) != `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}` {
		t.Fatalf("url_verification: %d %q", code, got)
	}
	if n := len(rig.delivered()); n != 0 {
		t.Fatalf("url_verification delivered %d events", n)
	}
}

func TestHTTPIngressDeliversEventsClicksAndCommands(t *testing.T) {
	rig := newIngressRig(t, true)
	ctx := t.Context()
	msg := fake.Message{EventID: "Ev0HTTP1", User: "U1", Channel: "D1", Text: "hello over http"}
	if code, body := readAnswer(rig.platform.Event(ctx, msg.Payload(), 0)); code != http.StatusOK || body != "" {
		t.Fatalf("event: %d %q", code, body)
	}
	// The platform's retry of the same event: delivered with Retry set, for
	// the drop filter to refuse as a redelivery.
	if code, _ := readAnswer(rig.platform.Event(ctx, msg.Payload(), 1)); code != http.StatusOK {
		t.Fatalf("retry: %d", code)
	}
	click := fake.BlockActions{User: "U1", Channel: "C1", MessageTS: "1.2", ThreadTS: "1.1", ActionID: "approve", Value: "req-1", TriggerID: "111.222.abc"}
	if code, _ := readAnswer(rig.platform.Interactive(ctx, click.Payload(), 0)); code != http.StatusOK {
		t.Fatalf("click: %d", code)
	}
	cmd := fake.SlashCommand{Command: "/mode", Text: "plan", User: "U1", Channel: "C1", TriggerID: "333.444.def"}
	if code, body := readAnswer(rig.platform.Command(ctx, cmd.Payload(), 0)); code != http.StatusOK || body != "" {
		t.Fatalf("command: %d %q", code, body)
	}
	evs := rig.delivered()
	if len(evs) != 4 {
		t.Fatalf("delivered %d events, want 4", len(evs))
	}
	if e := evs[0]; e.ID != "Ev0HTTP1" || e.Kind != pipeline.KindMessage || e.Text != "hello over http" || e.UserID != "U1" ||
		e.ChannelType != pipeline.ChannelIM || e.Retry != 0 || e.Received.IsZero() {
		t.Errorf("message: %+v", e)
	}
	if e := evs[1]; e.ID != "Ev0HTTP1" || e.Retry != 1 {
		t.Errorf("retry: id %q retry %d", e.ID, e.Retry)
	}
	if e := evs[2]; e.ID != "action:111.222.abc" || e.Kind != pipeline.KindAction || e.Action.ActionID != "approve" ||
		e.Action.Value != "req-1" || e.ThreadTS != "1.1" {
		t.Errorf("click: %+v %+v", e, e.Action)
	}
	if e := evs[3]; e.ID != "command:333.444.def" || e.Kind != pipeline.KindCommand || e.Command.Name != "/mode" ||
		e.Command.Args != "plan" || e.ChannelID != "C1" {
		t.Errorf("command: %+v %+v", e, e.Command)
	}
}

func TestHTTPIngressRefusesBadSignatures(t *testing.T) {
	rig := newIngressRig(t, true)
	ctx := t.Context()
	payload := fake.Message{User: "U1", Channel: "D1", Text: "forged"}.Payload()
	cases := map[string]fake.EventsHTTP{
		"wrong secret":    {Base: rig.platform.Base, Secret: "not-the-secret"},
		"too old":         {Base: rig.platform.Base, Now: func() time.Time { return time.Now().Add(-6 * time.Minute) }},
		"from the future": {Base: rig.platform.Base, Now: func() time.Time { return time.Now().Add(6 * time.Minute) }},
	}
	for name, p := range cases {
		if code, _ := readAnswer(p.Event(ctx, payload, 0)); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, code)
		}
	}
	// A body changed after signing, and no signature at all.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rig.platform.Base+PathEvents, strings.NewReader(string(payload)+" "))
	fake.Sign(req.Header, fake.DefaultSigningSecret, time.Now(), payload)
	if code, _ := readAnswer(http.DefaultClient.Do(req)); code != http.StatusUnauthorized {
		t.Errorf("tampered body: status %d, want 401", code)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, rig.platform.Base+PathCommands, strings.NewReader("command=%2Fmode"))
	if code, _ := readAnswer(http.DefaultClient.Do(req)); code != http.StatusUnauthorized {
		t.Errorf("unsigned: status %d, want 401", code)
	}
	if n := len(rig.delivered()); n != 0 {
		t.Fatalf("%d refused requests were delivered", n)
	}
	wctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if _, err := rig.logs.wait(wctx, "http ingress: request refused", "path", PathEvents); err != nil {
		t.Fatalf("no log line for a refused request: %v", err)
	}
	// Within the window, slightly off clocks are fine.
	ok := fake.EventsHTTP{Base: rig.platform.Base, Now: func() time.Time { return time.Now().Add(-4 * time.Minute) }}
	if code, _ := readAnswer(ok.Event(ctx, payload, 0)); code != http.StatusOK {
		t.Errorf("4 minutes old: status %d, want 200", code)
	}
}

// The platform's certificate check of a command URL is answered and
// handled as nothing.
func TestHTTPIngressSSLCheck(t *testing.T) {
	rig := newIngressRig(t, true)
	code, body := readAnswer(rig.platform.Post(t.Context(), PathCommands, "application/x-www-form-urlencoded",
		[]byte("ssl_check=1&token=x"), 0))
	if code != http.StatusOK || body != "" || len(rig.delivered()) != 0 {
		t.Fatalf("ssl_check: %d %q, %d events", code, body, len(rig.delivered()))
	}
	rig.logs.mu.Lock()
	defer rig.logs.mu.Unlock()
	for _, r := range rig.logs.records {
		if r.Level >= slog.LevelWarn {
			t.Errorf("ssl_check logged a warning: %s", r.Message)
		}
	}
}

func TestHTTPIngressNotRunningAnswers503(t *testing.T) {
	rig := newIngressRig(t, false)
	resp, err := rig.platform.Event(t.Context(), fake.Message{User: "U1", Channel: "D1", Text: "early"}.Payload(), 0)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := readAnswer(resp, nil)
	if code != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("before Run: %d (Retry-After %q), want 503 with Retry-After", code, resp.Header.Get("Retry-After"))
	}
}
