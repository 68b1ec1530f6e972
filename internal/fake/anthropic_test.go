package fake

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthTB records the failures the fake reports instead of failing the test.
type anthTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (tb *anthTB) Helper() {}

func (tb *anthTB) Errorf(format string, args ...any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.errs = append(tb.errs, fmt.Sprintf(format, args...))
}

func (tb *anthTB) failures() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.errs...)
}

// anthSDK returns an SDK client for a, configured from nothing but options.
func anthSDK(a *Anthropic) anthropic.Client {
	return anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(a.URL()),
		option.WithAPIKey("sk-test"),
		option.WithMaxRetries(0),
		option.WithoutOpenTelemetry(),
	)
}

// anthPost sends body to the fake's path with an API key and the version
// header, plus extra headers.
func anthPost(t *testing.T, a *Anthropic, path, body string, extra ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "sk-test")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			req.Header.Del(extra[i])
		} else {
			req.Header.Set(extra[i], extra[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func anthUserParams(text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are a test."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
}

func TestAnthropicNonStreaming(t *testing.T) {
	a := NewAnthropic(t)
	a.Enqueue(AnthropicResponse{
		Content: []AnthropicBlock{AnthropicText("hello there")},
		Usage:   AnthropicUsage{InputTokens: 10, OutputTokens: 3, CacheReadInputTokens: 7, CacheCreationInputTokens: 2},
	})
	client := anthSDK(a)
	msg, err := client.Messages.New(t.Context(), anthUserParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "hello there" {
		t.Errorf("content = %+v", msg.Content)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("stop_reason = %q", msg.StopReason)
	}
	if u := msg.Usage; u.InputTokens != 10 || u.OutputTokens != 3 || u.CacheReadInputTokens != 7 || u.CacheCreationInputTokens != 2 {
		t.Errorf("usage = %+v", u)
	}
	if msg.Model != "claude-test" {
		t.Errorf("model = %q", msg.Model)
	}

	reqs := a.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d", len(reqs))
	}
	r := reqs[0]
	if r.Stream || r.Model != "claude-test" || r.MaxTokens != 1024 || r.SystemText() != "You are a test." || r.LastUserText() != "hi" {
		t.Errorf("recorded = %+v (system %q, last user %q)", r, r.SystemText(), r.LastUserText())
	}
	if r.Header.Get("x-api-key") != "sk-test" || len(r.Body) == 0 {
		t.Errorf("headers/body not recorded")
	}
}

func TestAnthropicStreamingAccumulates(t *testing.T) {
	a := NewAnthropic(t)
	input := map[string]any{"command": "ls -la /tmp", "timeout": 30, "note": "héllo wörld"}
	a.Enqueue(AnthropicResponse{Content: []AnthropicBlock{
		AnthropicText("Let me look."),
		AnthropicToolUse("toolu_1", "Bash", input),
	}})
	client := anthSDK(a)
	stream := client.Messages.NewStreaming(t.Context(), anthUserParams("list files"))
	defer func() { _ = stream.Close() }()
	var msg anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if types[0] != "message_start" || types[len(types)-1] != "message_stop" || types[len(types)-2] != "message_delta" {
		t.Errorf("event order = %v", types)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 {
		t.Fatalf("message = %+v", msg)
	}
	if msg.Content[0].Text != "Let me look." {
		t.Errorf("text = %q", msg.Content[0].Text)
	}
	tu := msg.Content[1]
	if tu.Type != "tool_use" || tu.ID != "toolu_1" || tu.Name != "Bash" {
		t.Errorf("tool_use = %+v", tu)
	}
	var got map[string]any
	if err := json.Unmarshal(tu.Input, &got); err != nil {
		t.Fatalf("input %s: %v", tu.Input, err)
	}
	if got["command"] != "ls -la /tmp" || got["note"] != "héllo wörld" || got["timeout"] != float64(30) {
		t.Errorf("input = %v", got)
	}
	if !a.Requests()[0].Stream {
		t.Error("stream flag not recorded")
	}
}

// TestAnthropicStreamWire checks the raw event stream: every event named, the
// tool input split into several partial_json chunks, the start input empty.
func TestAnthropicStreamWire(t *testing.T) {
	a := NewAnthropic(t)
	a.Enqueue(ToolUse("toolu_9", "Read", map[string]string{"path": "/etc/hostname"}))
	res := anthPost(t, a, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content-type = %q", ct)
	}
	var names []string
	var partials []string
	sc := bufio.NewScanner(res.Body)
	var pending string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			pending = strings.TrimPrefix(line, "event: ")
			names = append(names, pending)
		case strings.HasPrefix(line, "data: "):
			if pending == "" {
				t.Errorf("data line without event line: %s", line)
			}
			var ev struct {
				Type         string `json:"type"`
				ContentBlock struct {
					Input json.RawMessage `json:"input"`
				} `json:"content_block"`
				Delta struct {
					Type        string `json:"type"`
					PartialJSON string `json:"partial_json"`
				} `json:"delta"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			if ev.Type != pending {
				t.Errorf("event %q carries type %q", pending, ev.Type)
			}
			if ev.Type == "content_block_start" && string(ev.ContentBlock.Input) != "{}" {
				t.Errorf("tool_use start input = %s", ev.ContentBlock.Input)
			}
			if ev.Delta.Type == "input_json_delta" && ev.Delta.PartialJSON != "" {
				partials = append(partials, ev.Delta.PartialJSON)
			}
		case line == "":
			pending = ""
		}
	}
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta"}
	if len(names) < len(want) || strings.Join(names[:4], ",") != strings.Join(want, ",") {
		t.Errorf("events = %v", names)
	}
	if len(partials) < 2 {
		t.Errorf("partial_json chunks = %q, want several", partials)
	}
	if got := strings.Join(partials, ""); got != `{"path":"/etc/hostname"}` {
		t.Errorf("joined input = %s", got)
	}
}

func TestAnthropicErrors(t *testing.T) {
	a := NewAnthropic(t)
	a.Enqueue(AnthropicResponse{Status: 529, RetryAfterMs: "0", RetryAfter: "1"})
	res := anthPost(t, a, "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`)
	if res.StatusCode != 529 || res.Header.Get("retry-after-ms") != "0" || res.Header.Get("retry-after") != "1" {
		t.Errorf("status %d headers %v", res.StatusCode, res.Header)
	}
	var body struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "error" || body.Error.Type != "overloaded_error" || body.Error.Message == "" {
		t.Errorf("body = %+v", body)
	}

	a.Enqueue(APIError(400, "", "prompt is too long: 210000 tokens > 200000 maximum"))
	sdk := anthSDK(a)
	_, err := sdk.Messages.New(t.Context(), anthUserParams("x"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type() != "invalid_request_error" {
		t.Errorf("err = %v", err)
	}
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	a := NewAnthropic(t)
	a.Enqueue(AnthropicStreamError("overloaded_error", "Overloaded"))
	sdk := anthSDK(a)
	stream := sdk.Messages.NewStreaming(t.Context(), anthUserParams("x"))
	defer func() { _ = stream.Close() }()
	for stream.Next() {
	}
	var apiErr *anthropic.Error
	if !errors.As(stream.Err(), &apiErr) || apiErr.Type() != "overloaded_error" {
		t.Errorf("err = %v", stream.Err())
	}
}

func TestAnthropicTruncate(t *testing.T) {
	a := NewAnthropic(t)
	a.Enqueue(AnthropicResponse{Content: []AnthropicBlock{AnthropicText("abc")}, TruncateAfter: 3})
	sdk := anthSDK(a)
	stream := sdk.Messages.NewStreaming(t.Context(), anthUserParams("x"))
	defer func() { _ = stream.Close() }()
	var n int
	var last string
	for stream.Next() {
		n++
		last = stream.Current().Type
	}
	if stream.Err() != nil || n != 2 || last == "message_stop" { // the ping is not surfaced
		t.Errorf("events %d, last %q, err %v", n, last, stream.Err())
	}
}

func TestAnthropicScriptOrder(t *testing.T) {
	a := NewAnthropic(t)
	a.Respond = func(req AnthropicRequest) AnthropicResponse {
		return TextReply("respond: " + req.LastUserText())
	}
	a.Enqueue(TextReply("first"))
	client := anthSDK(a)
	for _, want := range []string{"first", "respond: two"} {
		msg, err := client.Messages.New(t.Context(), anthUserParams("two"))
		if err != nil {
			t.Fatal(err)
		}
		if msg.Content[0].Text != want {
			t.Errorf("reply = %q, want %q", msg.Content[0].Text, want)
		}
	}
	if a.Pending() != 0 {
		t.Errorf("pending = %d", a.Pending())
	}

	b := NewAnthropic(t)
	sdk := anthSDK(b)
	msg, err := sdk.Messages.New(t.Context(), anthUserParams("x"))
	if err != nil || msg.Content[0].Text != AnthropicDefaultText {
		t.Errorf("default reply = %+v, %v", msg, err)
	}
}

func TestAnthropicZeroValueHandler(t *testing.T) {
	var a Anthropic
	srv := httptest.NewServer(&a)
	defer srv.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/messages",
		strings.NewReader(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != 200 || len(a.Requests()) != 1 {
		t.Errorf("status %d, requests %d", res.StatusCode, len(a.Requests()))
	}
}

func TestAnthropicCountTokens(t *testing.T) {
	a := NewAnthropic(t)
	sdk := anthSDK(a)
	res, err := sdk.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
		Model:    "m",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("word ", 100)))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.InputTokens < 50 {
		t.Errorf("input tokens = %d", res.InputTokens)
	}
}

func TestAnthropicWaitAndGate(t *testing.T) {
	a := NewAnthropic(t)
	gate := make(chan struct{})
	a.Enqueue(AnthropicResponse{Content: []AnthropicBlock{AnthropicText("late")}, Gate: gate})
	done := make(chan error, 1)
	go func() {
		sdk := anthSDK(a)
		_, err := sdk.Messages.New(context.Background(), anthUserParams("x"))
		done <- err
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := a.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("answered before the gate opened: %v", err)
	default:
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithCancel(t.Context())
	cancel2()
	if err := a.WaitRequests(short, 2); err == nil {
		t.Error("WaitRequests returned nil on a done context")
	}
}

// TestAnthropicRejects checks that what the real API refuses is answered with
// its status and reported to T.
// pngBlock and pdfBlock are image and document blocks whose data starts as
// a PNG and a PDF do.
const (
	pngBlock = `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUg=="}}`
	pdfBlock = `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQK"}}`
)

func TestAnthropicRejects(t *testing.T) {
	const user = `{"role":"user","content":"run it"}`
	const asstToolUse = `{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}`
	msgs := func(m ...string) string {
		return `{"model":"m","max_tokens":10,"messages":[` + strings.Join(m, ",") + `]}`
	}
	const cc = `"cache_control":{"type":"ephemeral"}`
	tests := []struct {
		name    string
		path    string
		body    string
		headers []string
		status  int
		report  string // substring of the failure reported to T; "" = none
	}{
		{name: "valid pairing", path: "/v1/messages", status: 200,
			body: msgs(user, asstToolUse, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done","is_error":true},{"type":"text","text":"and then?"}]}`)},
		{name: "tool_use unanswered", path: "/v1/messages", status: 400, report: "without `tool_result`",
			body: msgs(user, asstToolUse, `{"role":"user","content":"next"}`)},
		{name: "tool_use last", path: "/v1/messages", status: 400, report: "toolu_1",
			body: msgs(user, asstToolUse)},
		{name: "tool_result not first", path: "/v1/messages", status: 400, report: "must come before",
			body: msgs(user, asstToolUse, `{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]}`)},
		{name: "unexpected tool_result", path: "/v1/messages", status: 400, report: "unexpected `tool_use_id`",
			body: msgs(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"done"}]}`)},
		{name: "empty text", path: "/v1/messages", status: 400, report: "non-empty",
			body: msgs(`{"role":"user","content":[{"type":"text","text":""}]}`)},
		{name: "five breakpoints", path: "/v1/messages", status: 400, report: "maximum of 4",
			body: `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s",` + cc + `}],"tools":[{"name":"a","input_schema":{"type":"object"},` + cc + `},{"name":"b","input_schema":{"type":"object"},` + cc + `}],"messages":[{"role":"user","content":[{"type":"text","text":"x",` + cc + `},{"type":"text","text":"y",` + cc + `}]}]}`},
		{name: "bad tool name", path: "/v1/messages", status: 400, report: "pattern",
			body: `{"model":"m","max_tokens":10,"tools":[{"name":"a b","input_schema":{"type":"object"}}],"messages":[` + user + `]}`},
		{name: "no max_tokens", path: "/v1/messages", status: 400, report: "max_tokens",
			body: `{"model":"m","messages":[` + user + `]}`},
		{name: "invalid json", path: "/v1/messages", status: 400, report: "invalid JSON", body: `{"model":`},
		{name: "unknown path", path: "/v1/complete", status: 404, report: "unknown path", body: msgs(user)},
		{name: "no credential", path: "/v1/messages", status: 401, report: "x-api-key header is required",
			body: msgs(user), headers: []string{"x-api-key", ""}},
		{name: "both credentials", path: "/v1/messages", status: 401, report: "both",
			body: msgs(user), headers: []string{"Authorization", "Bearer t"}},
		{name: "oauth without beta", path: "/v1/messages", status: 401, report: "OAuth",
			body: msgs(user), headers: []string{"x-api-key", "", "Authorization", "Bearer sk-ant-oat01-x"}},
		{name: "oauth with beta", path: "/v1/messages", status: 200,
			body: msgs(user), headers: []string{"x-api-key", "", "Authorization", "Bearer sk-ant-oat01-x", "anthropic-beta", "oauth-2025-04-20"}},
		{name: "no version", path: "/v1/messages", status: 400, report: "anthropic-version",
			body: msgs(user), headers: []string{"anthropic-version", ""}},
		{name: "image and document", path: "/v1/messages", status: 200,
			body: msgs(`{"role":"user","content":[{"type":"text","text":"see"},` + pngBlock + `,` + pdfBlock + `]}`)},
		{name: "image not of its type", path: "/v1/messages", status: 400, report: "does not match the provided media type image/jpeg",
			body: msgs(`{"role":"user","content":[` + strings.Replace(pngBlock, "image/png", "image/jpeg", 1) + `]}`)},
		{name: "image of an unknown type", path: "/v1/messages", status: 400, report: "media_type",
			body: msgs(`{"role":"user","content":[` + strings.Replace(pngBlock, "image/png", "image/bmp", 1) + `]}`)},
		{name: "image from the assistant", path: "/v1/messages", status: 400, report: "only allowed in user messages",
			body: msgs(user, `{"role":"assistant","content":[`+pngBlock+`]}`)},
		{name: "document not a PDF", path: "/v1/messages", status: 400, report: "PDF specified was not valid",
			body: msgs(`{"role":"user","content":[` + strings.Replace(pdfBlock, "JVBERi0", "aGVsbG8", 1) + `]}`)},
		{name: "count_tokens without max_tokens", path: "/v1/messages/count_tokens", status: 200,
			body: `{"model":"m","messages":[` + user + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &anthTB{TB: t}
			a := NewAnthropic(t)
			a.T = tb
			res := anthPost(t, a, tt.path, tt.body, tt.headers...)
			if res.StatusCode != tt.status {
				body, _ := io.ReadAll(res.Body)
				t.Errorf("status = %d, want %d: %s", res.StatusCode, tt.status, body)
			}
			fails := tb.failures()
			switch {
			case tt.report == "" && len(fails) > 0:
				t.Errorf("unexpected failures: %q", fails)
			case tt.report != "" && (len(fails) != 1 || !strings.Contains(fails[0], tt.report)):
				t.Errorf("failures = %q, want one containing %q", fails, tt.report)
			}
		})
	}
}

func TestAnthropicWrongKey(t *testing.T) {
	tb := &anthTB{TB: t}
	a := NewAnthropic(t)
	a.T = tb
	a.Key = "sk-right"
	res := anthPost(t, a, "/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`)
	if res.StatusCode != 401 || len(tb.failures()) != 0 {
		t.Errorf("status %d, failures %q", res.StatusCode, tb.failures())
	}
}

func TestAnthChunks(t *testing.T) {
	for _, s := range []string{"", "a", "ab", "héllo wörld ünïcode", strings.Repeat("€", 10)} {
		got := anthChunks(s, 3)
		if strings.Join(got, "") != s || len(got) > 3 {
			t.Errorf("anthChunks(%q) = %q", s, got)
		}
		for _, c := range got {
			if c == "" || !utf8.ValidString(c) {
				t.Errorf("anthChunks(%q): chunk %q", s, c)
			}
		}
	}
}
