package fake

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// slackTB records the failures the fake reports instead of failing.
type slackTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (tb *slackTB) Errorf(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.errs = append(tb.errs, format)
}

func (tb *slackTB) failures() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.errs...)
}

func slackTestCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func slackPostForm(t *testing.T, s *Slack, method string, form url.Values) map[string]any {
	t.Helper()
	resp, err := http.PostForm(s.URL()+method, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSlackZeroValueAnswersAndReportsUnknowns(t *testing.T) {
	tb := &slackTB{TB: t}
	s := &Slack{T: tb}
	if got := slackPostForm(t, s, "auth.test", url.Values{"token": {DefaultBotToken}}); got["ok"] != true || got["user_id"] != DefaultBotUserID {
		t.Errorf("auth.test = %v", got)
	}
	if got := slackPostForm(t, s, "auth.test", url.Values{"token": {"xoxb-wrong"}}); got["error"] != "invalid_auth" {
		t.Errorf("auth.test with a wrong token = %v", got)
	}
	if len(tb.failures()) != 0 {
		t.Errorf("wrong token at auth.test failed the test: %v", tb.failures())
	}
	if got := slackPostForm(t, s, "chat.poke", url.Values{"token": {DefaultBotToken}}); got["error"] != "unknown_method" {
		t.Errorf("unknown method = %v", got)
	}
	if got := slackPostForm(t, s, "chat.postMessage", url.Values{"token": {DefaultAppToken}, "channel": {"C1"}, "text": {"x"}}); got["error"] != "not_allowed_token_type" {
		t.Errorf("post with the app token = %v", got)
	}
	if n := len(tb.failures()); n != 2 {
		t.Errorf("%d failures reported, want 2 (unknown method, wrong token): %v", n, tb.failures())
	}
	if got := s.Calls(); strings.Join(got, ",") != "auth.test,auth.test,chat.poke,chat.postMessage" {
		t.Errorf("calls = %v", got)
	}
}

func TestSlackSocketEchoAndAck(t *testing.T) {
	s := NewSlack(t)
	s.EchoPosts = true
	ctx := slackTestCtx(t)

	// apps.connections.open takes the app token as Bearer, with a JSON body.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"apps.connections.open", nil)
	req.Header.Set("Authorization", "Bearer "+DefaultAppToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var open struct {
		OK  bool   `json:"ok"`
		URL string `json:"url"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&open)
	resp.Body.Close()
	if !open.OK {
		t.Fatal("apps.connections.open refused the app token")
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, open.URL, http.Header{"Origin": {"https://api.slack.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
		t.Fatalf("first frame = %v, %v; want hello", hello, err)
	}
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}

	post := slackPostForm(t, s, "chat.postMessage", url.Values{"token": {DefaultBotToken}, "channel": {"C1"}, "text": {"hi"}, "thread_ts": {"1.0"}})
	var env struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
		Payload    struct {
			EventID string `json:"event_id"`
			Event   struct {
				Type, Channel, Text, TS string
				BotID                   string `json:"bot_id"`
				ThreadTS                string `json:"thread_ts"`
			} `json:"event"`
		} `json:"payload"`
	}
	if err := ws.ReadJSON(&env); err != nil {
		t.Fatal(err)
	}
	ev := env.Payload.Event
	if env.Type != EnvelopeEventsAPI || ev.Type != "message" || ev.BotID != DefaultBotID || ev.TS != post["ts"] ||
		ev.ThreadTS != "1.0" || ev.Text != "hi" {
		t.Errorf("echo = %+v; post answered %v", env, post)
	}
	if s.Acked(env.EnvelopeID) {
		t.Error("acked before the client acked")
	}
	if err := ws.WriteJSON(map[string]string{"envelope_id": env.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAck(ctx, env.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	if p, err := s.WaitForPost(ctx, func(p Post) bool { return p.Channel == "C1" }); err != nil || p.Text != "hi" {
		t.Errorf("WaitForPost = %+v, %v", p, err)
	}
}

// Blocks past the platform's limits are refused as the platform refuses
// them, and fail the test.
func TestSlackRefusesBlocksPastTheLimits(t *testing.T) {
	tb := &slackTB{TB: t}
	s := &Slack{T: tb}
	section := func(n int) map[string]any {
		return map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": strings.Repeat("é", n)}}
	}
	post := func(blocks ...map[string]any) map[string]any {
		raw, _ := json.Marshal(blocks)
		return slackPostForm(t, s, "chat.postMessage", url.Values{"token": {DefaultBotToken}, "channel": {"C1"}, "text": {"x"}, "blocks": {string(raw)}})
	}
	if got := post(section(3000)); got["ok"] != true {
		t.Errorf("a section of 3000 characters = %v", got)
	}
	if got := post(section(3001)); got["error"] != "invalid_blocks" {
		t.Errorf("a section of 3001 characters = %v", got)
	}
	var many []map[string]any
	for range 51 {
		many = append(many, section(1))
	}
	if got := post(many...); got["error"] != "invalid_blocks" {
		t.Errorf("51 blocks = %v", got)
	}
	if n := len(tb.failures()); n != 2 {
		t.Errorf("%d failures reported, want 2: %v", n, tb.failures())
	}
}

// An envelope a socket closed on before acknowledging it is sent again,
// as a retry, on the next socket: the platform redelivers what it was not
// acknowledged (platform-notes), also with one socket at a time.
func TestSlackSocketRedeliversUnacked(t *testing.T) {
	s := NewSlack(t)
	ctx := slackTestCtx(t)
	dial := func() *websocket.Conn {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"apps.connections.open", nil)
		req.Header.Set("Authorization", "Bearer "+DefaultAppToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var open struct {
			URL string `json:"url"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&open)
		resp.Body.Close()
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, open.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		var hello map[string]any
		if err := ws.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
			t.Fatalf("first frame = %v, %v; want hello", hello, err)
		}
		return ws
	}
	type envelope struct {
		EnvelopeID   string `json:"envelope_id"`
		RetryAttempt int    `json:"retry_attempt"`
		Payload      struct {
			EventID string `json:"event_id"`
		} `json:"payload"`
	}
	first := dial()
	if err := s.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	id := s.Send(EnvelopeEventsAPI, map[string]any{"event_id": "Ev1", "event": map[string]any{"type": "message"}}, 0)
	var got envelope
	if err := first.ReadJSON(&got); err != nil || got.EnvelopeID != id {
		t.Fatalf("first delivery = %+v, %v", got, err)
	}
	first.Close() // read, never acknowledged

	second := dial()
	defer second.Close()
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second)) // a failure, not a hang
	var again envelope
	if err := second.ReadJSON(&again); err != nil {
		t.Fatal(err)
	}
	if again.Payload.EventID != "Ev1" || again.RetryAttempt != 1 || again.EnvelopeID == id {
		t.Errorf("redelivery = %+v; want event Ev1 as retry 1 in a new envelope", again)
	}
}
