package slackio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// waitTimeout bounds every wait of these tests; none of them sleeps.
const waitTimeout = 10 * time.Second

// logRecorder is a slog.Handler that keeps every record and lets a test
// wait for one.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
	changed chan struct{}
}

func newLogRecorder() *logRecorder { return &logRecorder{changed: make(chan struct{})} }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	close(h.changed)
	h.changed = make(chan struct{})
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// wait returns the first record with message msg and, when attrs is not
// empty, the given attribute values (key, value, key, value...).
func (h *logRecorder) wait(ctx context.Context, msg string, attrs ...string) (slog.Record, error) {
	for {
		h.mu.Lock()
		recs, ch := h.records, h.changed
		h.mu.Unlock()
		for _, r := range recs {
			if r.Message == msg && recordHas(r, attrs...) {
				return r, nil
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return slog.Record{}, fmt.Errorf("log line %q %v never came: %w", msg, attrs, ctx.Err())
		}
	}
}

// all returns every record so far rendered as text.
func (h *logRecorder) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		line := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
		out = append(out, line)
	}
	return out
}

func recordHas(r slog.Record, kv ...string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == kv[i] && a.Value.String() == kv[i+1] {
				found = true
				return false
			}
			return true
		})
		if !found {
			return false
		}
	}
	return true
}

// socketRun is a SocketMode running against a fake. Its deliver function
// hands each event to the test and then blocks until the test releases it,
// so that the test can check the envelope is acked only after deliver
// (which records the event in the durable inbox) has returned.
type socketRun struct {
	slack   *fake.Slack
	logs    *logRecorder
	got     chan *pipeline.Event
	release chan struct{}
	done    chan error
	cancel  context.CancelFunc
}

func startSocket(t *testing.T, s *fake.Slack, appToken string) *socketRun {
	t.Helper()
	r := &socketRun{slack: s, logs: newLogRecorder(), got: make(chan *pipeline.Event),
		release: make(chan struct{}), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	client := NewClient(fake.DefaultBotToken, appToken, s.URL(), nil)
	sm := NewSocketMode(client, slog.New(r.logs))
	deliver := func(ev *pipeline.Event) {
		select {
		case r.got <- ev:
		case <-ctx.Done():
			return
		}
		select {
		case <-r.release:
		case <-ctx.Done():
		}
	}
	go func() { r.done <- sm.Run(ctx, deliver) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(waitTimeout):
			t.Error("Run did not return after cancel")
		}
	})
	return r
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// expect returns the next delivered event, after checking that the
// envelope carrying it is acked once deliver returns, and not before.
func (r *socketRun) expect(t *testing.T, envelopeID string) *pipeline.Event {
	t.Helper()
	ctx := testCtx(t)
	var ev *pipeline.Event
	select {
	case ev = <-r.got:
	case <-ctx.Done():
		t.Fatalf("envelope %s: no event delivered", envelopeID)
	}
	// deliver is blocked, and the ack comes after it.
	if r.slack.Acked(envelopeID) {
		t.Fatalf("envelope %s was acked before deliver returned", envelopeID)
	}
	r.release <- struct{}{}
	if err := r.slack.WaitAck(ctx, envelopeID); err != nil {
		t.Fatalf("envelope %s was not acked after deliver: %v", envelopeID, err)
	}
	return ev
}

func TestSocketModeConnectsAndLogsReady(t *testing.T) {
	s := fake.NewSlack(t)
	r := startSocket(t, s, fake.DefaultAppToken)
	ctx := testCtx(t)
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.logs.wait(ctx, "slack socket mode started"); err != nil {
		t.Fatal(err)
	}
	rec, err := r.logs.wait(ctx, "socket ready", "app_id", fake.DefaultAppID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Level != slog.LevelInfo {
		t.Errorf("socket ready logged at %v, want INFO", rec.Level)
	}
}

func TestSocketModeDeliversEvents(t *testing.T) {
	s := fake.NewSlack(t)
	r := startSocket(t, s, fake.DefaultAppToken)
	if err := s.WaitConnected(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	file := s.AddFile("notes.txt", []byte("hello"))
	const secret = "words-that-must-not-be-logged"

	tests := []struct {
		name  string
		send  func() string
		want  pipeline.Event
		retry int
	}{
		{
			name: "app_mention",
			send: func() string {
				return s.SendEvent(fake.AppMention{EventID: "Ev1", User: "U1", Channel: "C1", TS: "1.1", Text: "<@U0BOT> " + secret}.Payload())
			},
			want: pipeline.Event{ID: "Ev1", Kind: pipeline.KindMessage, Type: "app_mention", TeamID: fake.DefaultTeamID,
				ChannelID: "C1", ChannelType: pipeline.ChannelPublic, UserID: "U1", TS: "1.1", Text: "<@U0BOT> " + secret},
		},
		{
			name: "app_mention in a private channel thread",
			send: func() string {
				return s.SendEvent(fake.AppMention{EventID: "Ev2", User: "U1", Channel: "G1", TS: "2.2", ThreadTS: "2.1", Text: "<@U0BOT> hi"}.Payload())
			},
			want: pipeline.Event{ID: "Ev2", Kind: pipeline.KindMessage, Type: "app_mention", TeamID: fake.DefaultTeamID,
				ChannelID: "G1", ChannelType: pipeline.ChannelPrivate, UserID: "U1", TS: "2.2", ThreadTS: "2.1", Text: "<@U0BOT> hi"},
		},
		{
			name: "DM message",
			send: func() string {
				return s.SendEvent(fake.Message{EventID: "Ev3", User: "U1", Channel: "D1", TS: "3.1", Text: secret}.Payload())
			},
			want: pipeline.Event{ID: "Ev3", Kind: pipeline.KindMessage, Type: "message", TeamID: fake.DefaultTeamID,
				ChannelID: "D1", ChannelType: pipeline.ChannelIM, UserID: "U1", TS: "3.1", Text: secret},
		},
		{
			name: "threaded reply, redelivered",
			send: func() string {
				return s.Send(fake.EnvelopeEventsAPI, fake.Message{EventID: "Ev4", User: "U2", Channel: "C1", TS: "4.2",
					ThreadTS: "4.1", ParentUserID: "U1", Text: "reply"}.Payload(), 2)
			},
			want: pipeline.Event{ID: "Ev4", Kind: pipeline.KindMessage, Type: "message", TeamID: fake.DefaultTeamID,
				ChannelID: "C1", ChannelType: pipeline.ChannelPublic, UserID: "U2", TS: "4.2", ThreadTS: "4.1", ParentUserID: "U1", Text: "reply", Retry: 2},
		},
		{
			name: "bot message",
			send: func() string {
				return s.SendEvent(fake.Message{EventID: "Ev5", User: "U0BOT", BotID: "B0BOT", Channel: "C1", TS: "5.1", Text: "mine"}.Payload())
			},
			want: pipeline.Event{ID: "Ev5", Kind: pipeline.KindMessage, Type: "message", TeamID: fake.DefaultTeamID,
				ChannelID: "C1", ChannelType: pipeline.ChannelPublic, UserID: "U0BOT", BotID: "B0BOT", TS: "5.1", Text: "mine"},
		},
		{
			name: "message_changed",
			send: func() string {
				return s.SendEvent(fake.MessageChanged{EventID: "Ev6", Channel: "C1", TS: "6.9", EditedTS: "6.1",
					ThreadTS: "6.0", User: "U1", Text: "new", PreviousText: "old"}.Payload())
			},
			want: pipeline.Event{ID: "Ev6", Kind: pipeline.KindMessage, Type: "message", Subtype: "message_changed",
				TeamID: fake.DefaultTeamID, ChannelID: "C1", ChannelType: pipeline.ChannelPublic, UserID: "U1",
				TS: "6.1", ThreadTS: "6.0", Text: "new"},
		},
		{
			name: "message with a file",
			send: func() string {
				return s.SendEvent(fake.Message{EventID: "Ev7", User: "U1", Channel: "D1", TS: "7.1", Subtype: "file_share",
					Files: []fake.File{file}}.Payload())
			},
			want: pipeline.Event{ID: "Ev7", Kind: pipeline.KindMessage, Type: "message", Subtype: "file_share",
				TeamID: fake.DefaultTeamID, ChannelID: "D1", ChannelType: pipeline.ChannelIM, UserID: "U1", TS: "7.1",
				Files: []pipeline.File{{ID: file.ID, Name: "notes.txt", MimeType: file.MimeType, Size: 5, URL: file.URLPrivateDownload}}},
		},
		{
			name: "block_actions click",
			send: func() string {
				return s.Send(fake.EnvelopeInteractive, fake.BlockActions{User: "U2", Channel: "C1", MessageTS: "8.2",
					ThreadTS: "8.1", ActionID: pipeline.ActionApprove, Value: "ap-1", TriggerID: "trig-1",
					ResponseURL: "https://hooks.slack.com/actions/T/1/x"}.Payload(), 0)
			},
			want: pipeline.Event{ID: "action:trig-1", Kind: pipeline.KindAction, Type: "block_actions", TeamID: fake.DefaultTeamID,
				ChannelID: "C1", ChannelType: pipeline.ChannelPublic, UserID: "U2", TS: "8.2", ThreadTS: "8.1",
				Action: &pipeline.Action{ActionID: pipeline.ActionApprove, Value: "ap-1", MessageTS: "8.2",
					ResponseURL: "https://hooks.slack.com/actions/T/1/x"}},
		},
		{
			name: "slash command in a DM",
			send: func() string {
				return s.Send(fake.EnvelopeSlashCommands, fake.SlashCommand{Command: "/ingest", Text: " wiki ", User: "U3",
					Channel: "D9", TriggerID: "trig-2", ResponseURL: "https://hooks.slack.com/commands/T/1/y"}.Payload(), 0)
			},
			want: pipeline.Event{ID: "command:trig-2", Kind: pipeline.KindCommand, Type: "slash_command", TeamID: fake.DefaultTeamID,
				ChannelID: "D9", ChannelType: pipeline.ChannelIM, UserID: "U3", Text: "/ingest  wiki",
				Command: &pipeline.Command{Name: "/ingest", Args: "wiki", ResponseURL: "https://hooks.slack.com/commands/T/1/y",
					TriggerID: "trig-2"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			got := r.expect(t, tc.send())
			if got.Received.Before(before) {
				t.Errorf("Received = %v, before the send at %v", got.Received, before)
			}
			got.Received = time.Time{}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("event =\n%+v\nwant\n%+v", *got, tc.want)
			}
		})
	}
	for _, line := range r.logs.all() {
		if strings.Contains(line, secret) {
			t.Errorf("message text logged: %s", line)
		}
	}
}

func TestSocketModeSurvivesBadFrames(t *testing.T) {
	s := fake.NewSlack(t)
	r := startSocket(t, s, fake.DefaultAppToken)
	ctx := testCtx(t)
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}

	s.SendRaw([]byte(`{not json`))
	unknownType := s.Send("future_envelope", map[string]any{"x": 1}, 0)
	badPayload := s.Send(fake.EnvelopeEventsAPI, map[string]any{"type": "event_callback", "event": "not an object"}, 0)
	unknownToSlackGo := s.SendEvent(fake.EventCallback("", "", map[string]any{"type": "future_event", "channel": "C1"}))
	assistant := s.SendEvent(fake.EventCallback("", "", map[string]any{"type": "assistant_thread_started",
		"assistant_thread": map[string]any{"user_id": "U1", "channel_id": "D1", "thread_ts": "9.1"}}))
	otherInteraction := s.Send(fake.EnvelopeInteractive, map[string]any{"type": "view_closed", "user": map[string]any{"id": "U1"}}, 0)
	for _, id := range []string{unknownType, badPayload, unknownToSlackGo, assistant, otherInteraction} {
		if err := s.WaitAck(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// The loop is sequential: the next event delivered is the mention, so
	// none of the frames above was delivered.
	ev := r.expect(t, s.SendEvent(fake.AppMention{EventID: "EvOK", User: "U1", Channel: "C1", Text: "<@U0BOT> still there"}.Payload()))
	if ev.ID != "EvOK" {
		t.Errorf("delivered %q after the bad frames, want EvOK", ev.ID)
	}

	if _, err := r.logs.wait(ctx, "socket read failed"); err != nil {
		t.Error(err)
	}
	for _, typ := range []string{"future_envelope", "events_api"} {
		rec, err := r.logs.wait(ctx, "socket envelope not understood", "envelope_type", typ)
		if err != nil {
			t.Error(err)
		} else if rec.Level != slog.LevelWarn {
			t.Errorf("%s logged at %v, want WARN", typ, rec.Level)
		}
	}
	for _, what := range []string{"future_event", "assistant_thread_started", "view_closed"} {
		if _, err := r.logs.wait(ctx, "socket envelope ignored", "event_type", what); err != nil {
			t.Error(err)
		}
	}
}

func TestSocketModeReconnectsOnDisconnect(t *testing.T) {
	s := fake.NewSlack(t)
	r := startSocket(t, s, fake.DefaultAppToken)
	ctx := testCtx(t)
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	s.Disconnect("refresh_requested")
	if err := s.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.logs.wait(ctx, "socket reconnecting"); err != nil {
		t.Error(err)
	}
	ev := r.expect(t, s.SendEvent(fake.Message{EventID: "EvAfter", User: "U1", Channel: "D1", Text: "after"}.Payload()))
	if ev.ID != "EvAfter" {
		t.Errorf("delivered %q after the reconnect, want EvAfter", ev.ID)
	}
}

func TestSocketModeRefusedToken(t *testing.T) {
	tests := []struct {
		name      string
		authError string
		appToken  string
		want      string
	}{
		{"invalid_auth", "invalid_auth", fake.DefaultAppToken,
			"socket mode: invalid_auth (check CHAT_APP_TOKEN has connections:write and socket mode is enabled)"},
		{"bot token as app token", "", fake.DefaultBotToken,
			"socket mode: not_allowed_token_type (CHAT_APP_TOKEN must be the app-level xapp- token, not the bot token)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fake.NewSlack(t)
			s.AuthError = tc.authError
			logs := newLogRecorder()
			sm := NewSocketMode(NewClient(fake.DefaultBotToken, tc.appToken, s.URL(), nil), slog.New(logs))
			err := sm.Run(testCtx(t), func(*pipeline.Event) { t.Error("deliver called") })
			if !errors.Is(err, ErrSocketAuth) {
				t.Fatalf("Run = %v, want an ErrSocketAuth error", err)
			}
			if err.Error() != tc.want {
				t.Errorf("Run = %q, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.appToken) {
				t.Errorf("error contains the token: %q", err)
			}
		})
	}
}

func TestSocketModeRetriesTransientErrors(t *testing.T) {
	s := fake.NewSlack(t)
	s.Errors = map[string]string{"apps.connections.open": "internal_error"}
	r := startSocket(t, s, fake.DefaultAppToken)
	ctx := testCtx(t)
	if _, err := r.logs.wait(ctx, "socket connection failed"); err != nil {
		t.Fatal(err)
	}
	s.Script(func(s *fake.Slack) { s.Errors = nil })
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
}

// A cancelled Run returns nil, and warns of nothing: the connection it
// closes on its way out is no failure.
func TestSocketModeReturnsNilOnCancel(t *testing.T) {
	s := fake.NewSlack(t)
	logs := newLogRecorder()
	sm := NewSocketMode(NewClient(fake.DefaultBotToken, fake.DefaultAppToken, s.URL(), nil), slog.New(logs))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sm.Run(ctx, func(*pipeline.Event) {}) }()
	if err := s.WaitConnected(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	case <-testCtx(t).Done():
		t.Fatal("Run did not return after cancel")
	}
	for _, l := range logs.all() {
		if strings.HasPrefix(l, "WARN") || strings.HasPrefix(l, "ERROR") {
			t.Errorf("logged on a clean stop: %s", l)
		}
	}
}

func TestSocketModeWrongAPIURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	sm := NewSocketMode(NewClient(fake.DefaultBotToken, fake.DefaultAppToken, srv.URL, nil), slog.New(newLogRecorder()))
	err := sm.Run(testCtx(t), func(*pipeline.Event) { t.Error("deliver called") })
	if err == nil || !strings.Contains(err.Error(), "check CHAT_API_URL") {
		t.Errorf("Run against a 404 = %v, want an error naming CHAT_API_URL", err)
	}
}

// gaugeRecorder is a Gauge that keeps every value set and lets a test
// wait for a history.
type gaugeRecorder struct {
	mu      sync.Mutex
	values  []float64
	changed chan struct{}
}

func (g *gaugeRecorder) Set(v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.values = append(g.values, v)
	close(g.changed)
	g.changed = make(chan struct{})
}

// waitFor waits until the values set, with repeats collapsed, end with want.
func (g *gaugeRecorder) waitFor(ctx context.Context, want ...float64) error {
	for {
		g.mu.Lock()
		var got []float64
		for _, v := range g.values {
			if len(got) == 0 || got[len(got)-1] != v {
				got = append(got, v)
			}
		}
		ch := g.changed
		g.mu.Unlock()
		if len(got) >= len(want) && reflect.DeepEqual(got[len(got)-len(want):], want) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("gauge went %v, want it to end %v: %w", got, want, ctx.Err())
		}
	}
}

// The connection gauge (agent_socket_connected, which the shipped alert
// watches) is 0 until the platform's hello, 1 while a connection is open,
// 0 across a reconnect and while connecting fails, and 0 after Run.
func TestSocketModeReportsConnection(t *testing.T) {
	s := fake.NewSlack(t)
	s.Errors = map[string]string{"apps.connections.open": "internal_error"}
	g := &gaugeRecorder{changed: make(chan struct{})}
	logs := newLogRecorder()
	sm := NewSocketMode(NewClient(fake.DefaultBotToken, fake.DefaultAppToken, s.URL(), nil), slog.New(logs))
	sm.SetConnectedGauge(g)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sm.Run(ctx, func(*pipeline.Event) {}) }()
	wait := testCtx(t)
	if _, err := logs.wait(wait, "socket connection failed"); err != nil {
		t.Fatal(err)
	}
	if err := g.waitFor(wait, 0); err != nil {
		t.Fatalf("while connecting fails: %v", err)
	}
	s.Script(func(s *fake.Slack) { s.Errors = nil })
	if err := s.WaitConnected(wait); err != nil {
		t.Fatal(err)
	}
	if err := g.waitFor(wait, 0, 1); err != nil {
		t.Fatalf("after hello: %v", err)
	}
	s.Disconnect("refresh_requested")
	if err := s.WaitConnections(wait, 2); err != nil {
		t.Fatal(err)
	}
	if err := g.waitFor(wait, 0, 1, 0, 1); err != nil {
		t.Fatalf("across a reconnect: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if err := g.waitFor(wait, 0, 1, 0, 1, 0); err != nil {
		t.Fatalf("after Run: %v", err)
	}
}
