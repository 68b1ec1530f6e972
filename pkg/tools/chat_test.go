package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

const secret = "s3cr3t-token"

// redactor is a tools.Redactor scripted by its field.
type redactor struct {
	RedactFn func(text string) string
}

func (r redactor) Redact(text string) string { return r.RedactFn(text) }

// secretRedactor replaces secret.
var secretRedactor = redactor{RedactFn: func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }}

// outbox is a pipeline.Outbox scripted by its fields; nil fields fail the
// test when called.
type outbox struct {
	PostFn   func(ctx context.Context, markdown string) (string, error)
	UpdateFn func(ctx context.Context, ts, markdown string) error
}

func (o *outbox) Post(ctx context.Context, markdown string) (string, error) {
	return o.PostFn(ctx, markdown)
}

func (o *outbox) Update(ctx context.Context, ts, markdown string) error {
	return o.UpdateFn(ctx, ts, markdown)
}

// chatEnv is the agent_chat tools with a recording outbox.
type chatEnv struct {
	reg     *tools.Registry
	ctx     context.Context
	out     *outbox
	posts   []string
	updates []string
	replied int
}

func newChatEnv(t *testing.T) *chatEnv {
	t.Helper()
	e := &chatEnv{reg: tools.NewRegistry()}
	e.out = &outbox{
		PostFn: func(_ context.Context, md string) (string, error) {
			e.posts = append(e.posts, md)
			return "1700000000.000100", nil
		},
		UpdateFn: func(_ context.Context, ts, md string) error {
			e.updates = append(e.updates, ts+" "+md)
			return nil
		},
	}
	chat := &tools.ChatServer{Redactor: secretRedactor, Replied: func(context.Context) { e.replied++ }}
	e.reg.Add(chat.Tools()...)
	e.ctx = tools.NewContextWithTurn(t.Context(), &pipeline.Turn{Out: e.out})
	return e
}

func (e *chatEnv) call(t *testing.T, ctx context.Context, name, input string) tools.Result {
	t.Helper()
	var in json.RawMessage
	if input != "" {
		in = json.RawMessage(input)
	}
	res, err := e.reg.Call(ctx, name, in)
	if err != nil {
		t.Fatalf("Call(%s) error = %v", name, err)
	}
	return res
}

func TestReplyPostsRedacted(t *testing.T) {
	e := newChatEnv(t)
	res := e.call(t, e.ctx, tools.ChatReply, `{"text":"**Done.** The token is `+secret+`."}`)
	if want := (tools.Result{Text: "posted (ts 1700000000.000100)"}); res != want {
		t.Errorf("reply = %+v, want %+v", res, want)
	}
	if want := "**Done.** The token is [redacted]."; len(e.posts) != 1 || e.posts[0] != want {
		t.Errorf("posts = %q, want [%q]", e.posts, want)
	}
	if e.replied != 1 {
		t.Errorf("Replied called %d times, want 1", e.replied)
	}
}

func TestReplyWithoutRepliedHook(t *testing.T) {
	e := newChatEnv(t)
	reg := tools.NewRegistry()
	reg.Add((&tools.ChatServer{Redactor: secretRedactor}).Tools()...)
	if res, err := reg.Call(e.ctx, tools.ChatReply, json.RawMessage(`{"text":"hi"}`)); err != nil || res.IsError {
		t.Fatalf("reply = %+v, %v", res, err)
	}
	if len(e.posts) != 1 {
		t.Errorf("posts = %q", e.posts)
	}
}

func TestChatRefusals(t *testing.T) {
	tests := []struct {
		name   string
		tool   string
		input  string
		noTurn bool
		reason string
	}{
		{name: "reply empty text", tool: tools.ChatReply, input: `{"text":""}`, reason: "text is empty"},
		{name: "reply blank text", tool: tools.ChatReply, input: `{"text":" \n\t"}`, reason: "text is empty"},
		{name: "reply no input", tool: tools.ChatReply, reason: "text is empty"},
		{name: "reply bad JSON", tool: tools.ChatReply, input: `{"text":`, reason: "invalid input"},
		{name: "reply text not a string", tool: tools.ChatReply, input: `{"text":42}`, reason: "invalid input"},
		{name: "reply no turn", tool: tools.ChatReply, input: `{"text":"hi"}`, noTurn: true, reason: "no chat thread"},
		{name: "edit no ts", tool: tools.ChatEdit, input: `{"text":"hi"}`, reason: "ts and text are required"},
		{name: "edit empty text", tool: tools.ChatEdit, input: `{"ts":"1.2","text":"  "}`, reason: "ts and text are required"},
		{name: "edit bad JSON", tool: tools.ChatEdit, input: `[1]`, reason: "invalid input"},
		{name: "edit no turn", tool: tools.ChatEdit, input: `{"ts":"1.2","text":"hi"}`, noTurn: true, reason: "no chat thread"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newChatEnv(t)
			ctx := e.ctx
			if tt.noTurn {
				ctx = t.Context()
			}
			res := e.call(t, ctx, tt.tool, tt.input)
			if !res.IsError || !strings.Contains(res.Text, tt.reason) || strings.Contains(res.Text, "\n") {
				t.Errorf("result = %+v, want an error result of one line containing %q", res, tt.reason)
			}
			if len(e.posts) != 0 || len(e.updates) != 0 || e.replied != 0 {
				t.Errorf("posts %q, updates %q, Replied %d times; want nothing", e.posts, e.updates, e.replied)
			}
		})
	}
}

func TestEditUpdatesRedacted(t *testing.T) {
	e := newChatEnv(t)
	res := e.call(t, e.ctx, tools.ChatEdit, `{"ts":"1700000000.000100","text":"fixed: `+secret+`"}`)
	if want := (tools.Result{Text: "edited 1700000000.000100"}); res != want {
		t.Errorf("edit = %+v, want %+v", res, want)
	}
	if want := "1700000000.000100 fixed: [redacted]"; len(e.updates) != 1 || e.updates[0] != want {
		t.Errorf("updates = %q, want [%q]", e.updates, want)
	}
	if len(e.posts) != 0 || e.replied != 0 {
		t.Errorf("an edit posted %q or counted as a reply (%d)", e.posts, e.replied)
	}
}

// A post or an edit the platform refused is a tool error the model reads,
// naming the platform's reason: its words were not seen.
func TestOutboxErrorsAreToldToTheModel(t *testing.T) {
	boom := errors.New("channel_not_found")
	tests := []struct {
		name  string
		tool  string
		input string
	}{
		{"reply", tools.ChatReply, `{"text":"hi"}`},
		{"edit", tools.ChatEdit, `{"ts":"1.2","text":"hi"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newChatEnv(t)
			e.out.PostFn = func(context.Context, string) (string, error) { return "", boom }
			e.out.UpdateFn = func(context.Context, string, string) error { return boom }
			res, err := e.reg.Call(e.ctx, tt.tool, json.RawMessage(tt.input))
			if err != nil || !res.IsError || !strings.Contains(res.Text, "not delivered") || !strings.Contains(res.Text, "channel_not_found") {
				t.Errorf("Call = %+v, %v; want an error result saying not delivered (channel_not_found)", res, err)
			}
			if e.replied != 0 {
				t.Errorf("Replied called %d times after a failed post", e.replied)
			}
		})
	}
}

// approvals is a tools.Approvals scripted by its field.
type approvals struct {
	RequestApprovalFn func(ctx context.Context, t *pipeline.Turn, category, summary, details string) (string, error)
}

func (a approvals) RequestApproval(ctx context.Context, t *pipeline.Turn, category, summary, details string) (string, error) {
	return a.RequestApprovalFn(ctx, t, category, summary, details)
}

func TestRequestApproval(t *testing.T) {
	boom := errors.New("card not posted")
	tests := []struct {
		name    string
		input   string
		noTurn  bool
		noAsker bool
		answer  error
		want    tools.Result
		asked   string // "category|summary|details" the approvals got
		wantErr error
	}{
		{name: "approved", input: `{"category":" deploy ","summary":"Deploy ` + secret + `","details":"key ` + secret + `"}`,
			want: tools.Result{Text: "approved by <@U0APP>"}, asked: "deploy|Deploy [redacted]|key [redacted]"},
		{name: "no details", input: `{"category":"spend","summary":"Buy a domain"}`,
			want: tools.Result{Text: "approved by <@U0APP>"}, asked: "spend|Buy a domain|"},
		{name: "no category", input: `{"summary":"x"}`, want: tools.Errorf("category (one word) and summary are required")},
		{name: "category of two words", input: `{"category":"big deploy","summary":"x"}`, want: tools.Errorf("category (one word) and summary are required")},
		{name: "blank summary", input: `{"category":"deploy","summary":"  "}`, want: tools.Errorf("category (one word) and summary are required")},
		{name: "bad JSON", input: `{"category":1}`, want: tools.Result{IsError: true}},
		{name: "no turn", input: `{"category":"deploy","summary":"x"}`, noTurn: true, want: tools.Errorf("no chat thread to ask in")},
		{name: "no approvals wired", input: `{"category":"deploy","summary":"x"}`, noAsker: true, want: tools.Errorf("no chat thread to ask in")},
		{name: "error passed on", input: `{"category":"deploy","summary":"x"}`, answer: boom, wantErr: boom, asked: "deploy|x|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked string
			chat := &tools.ChatServer{Redactor: secretRedactor}
			if !tt.noAsker {
				chat.Approvals = approvals{RequestApprovalFn: func(_ context.Context, _ *pipeline.Turn, c, s, d string) (string, error) {
					asked = c + "|" + s + "|" + d
					if tt.answer != nil {
						return "", tt.answer
					}
					return "approved by <@U0APP>", nil
				}}
			}
			reg := tools.NewRegistry()
			reg.Add(chat.Tools()...)
			ctx := tools.NewContextWithTurn(t.Context(), &pipeline.Turn{})
			if tt.noTurn {
				ctx = t.Context()
			}
			got, err := reg.Call(ctx, tools.ChatRequestApproval, json.RawMessage(tt.input))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Call error = %v, want %v", err, tt.wantErr)
			}
			if tt.want.IsError && tt.want.Text == "" {
				if !got.IsError || !strings.HasPrefix(got.Text, "invalid input") {
					t.Errorf("result = %+v, want an invalid input error", got)
				}
			} else if got != tt.want {
				t.Errorf("result = %+v, want %+v", got, tt.want)
			}
			if asked != tt.asked {
				t.Errorf("approvals asked %q, want %q", asked, tt.asked)
			}
		})
	}
}
