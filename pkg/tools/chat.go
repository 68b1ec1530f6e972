package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Names of the agent_chat tools (interfaces.md).
const (
	ChatReply           = "mcp__agent_chat__reply"
	ChatEdit            = "mcp__agent_chat__edit"
	ChatUpload          = "mcp__agent_chat__upload"
	ChatRequestApproval = "mcp__agent_chat__request_approval"
)

// Redactor scrubs secrets from text the agent posts.
type Redactor interface {
	Redact(text string) string
}

// Approvals asks people in the thread for a decision.
type Approvals interface {
	// RequestApproval posts a card and waits; it returns the outcome as
	// text ("approved by <@U…>", "denied by <@U…>", "timed out: …").
	RequestApproval(ctx context.Context, t *pipeline.Turn, category, summary, details string) (string, error)
}

// Uploader uploads a file into a thread.
type Uploader interface {
	Upload(ctx context.Context, u pipeline.Upload) error
}

// maxUpload caps what upload sends (the platform's own limit is higher;
// a chat file larger than this is rarely what a person wants).
const maxUpload = 50 << 20

// ChatServer is the agent_chat tool server: the agent's voice, and its
// eyes on the conversation it is in (chat_read.go). Its tools are never
// gated.
type ChatServer struct {
	Redactor  Redactor
	Approvals Approvals
	// Uploader and Open serve upload: Open opens a regular file for
	// reading, confined to the thread's workspace (the file tools' rule,
	// Builtins.OpenInWorkspace); its error is the one-line refusal.
	Uploader Uploader
	Open     func(threadKey, path string) (*os.File, error)
	// Replied is called after every successful reply (the stop guard
	// counts them).
	Replied func(ctx context.Context)

	// Reader serves the read tools and the reactions (chat_read.go); nil:
	// they answer that there is no platform to read.
	Reader ChatReader
	// Roles gives the envelope role of the authors of the messages read
	// and of the members listed; nil: member.
	Roles Roles
	// Self is the bot's identity: its own messages are marked as such.
	Self func() pipeline.Identity
	// Unheard reports whether a person's words never reach the model
	// (blocked, or muted now): the reads leave their messages out, as the
	// drop stage does, and say how many. nil: everyone is heard.
	Unheard func(ctx context.Context, userID string) (bool, error)
	// Now is the profile cache's clock; nil means time.Now.
	Now func() time.Time

	profiles profileCache
}

// Tools returns the tools of the server.
func (c *ChatServer) Tools() []Tool {
	return append([]Tool{
		{
			Name:        ChatReply,
			Description: "Post a reply in the current chat thread. This is the only way anyone sees what you say. Write markdown; it is converted to the chat's format. To hand work to another persona (a peer), mention it as <@U…> in the text; a peer's message needs no reply unless you add something. Returns the ts of the posted message.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The reply, in markdown."}},"required":["text"],"additionalProperties":false}`),
			Call:        c.reply,
		},
		{
			Name:        ChatEdit,
			Description: "Replace the text of a message you posted earlier in this thread (by the ts that reply returned).",
			Schema:      json.RawMessage(`{"type":"object","properties":{"ts":{"type":"string","description":"The ts of your message."},"text":{"type":"string","description":"The new text, in markdown."}},"required":["ts","text"],"additionalProperties":false}`),
			Call:        c.edit,
		},
		{
			Name:        ChatUpload,
			Description: "Upload a file from your workspace into this thread (a report, a log, an export). The path may be relative to the workspace.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"The file, inside the workspace."},"title":{"type":"string"},"comment":{"type":"string","description":"A message posted with the file, in markdown."}},"required":["path"],"additionalProperties":false}`),
			Call:        c.upload,
		},
		{
			Name: ChatRequestApproval,
			Description: "Ask the people of this thread for a decision before consequential work (deploys, deletions, publishing, spending, messages outside the thread). " +
				"Posts an approval card and waits for an authorised approver's click; returns approved, denied or timed out, and by whom. Respect a denial.",
			Schema: json.RawMessage(`{"type":"object","properties":{"category":{"type":"string","description":"What kind of decision this is (e.g. deploy, skills, spend); approvers are authorised per category."},"summary":{"type":"string","description":"One line saying exactly what will be done."},"details":{"type":"string","description":"Optional details."}},"required":["category","summary"],"additionalProperties":false}`),
			Call:   c.requestApproval,
		},
	}, c.readTools()...)
}

func (c *ChatServer) upload(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Path    string `json:"path"`
		Title   string `json:"title"`
		Comment string `json:"comment"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	t, ok := TurnFromContext(ctx)
	if !ok || c.Uploader == nil || c.Open == nil {
		return Errorf("no chat thread to upload to"), nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return Errorf("path is required"), nil
	}
	f, err := c.Open(t.Event.ThreadKey(), in.Path)
	if err != nil {
		return Errorf("%v", err), nil
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return Errorf("cannot upload %s: %v", in.Path, err), nil
	case !st.Mode().IsRegular():
		return Errorf("%s is not a regular file", in.Path), nil
	case st.Size() == 0:
		return Errorf("%s is empty; the chat refuses empty files", in.Path), nil
	case st.Size() > maxUpload:
		return Errorf("%s is %d bytes; the upload limit is %d", in.Path, st.Size(), maxUpload), nil
	}
	content, err := io.ReadAll(io.LimitReader(f, maxUpload))
	if err != nil {
		return Errorf("cannot read %s: %v", in.Path, err), nil
	}
	// The file's text is redacted like any reply; a binary file that shows
	// a credential is not sent at all (redacting it would corrupt it).
	if red := c.Redactor.Redact(string(content)); red != string(content) {
		if !utf8.Valid(content) {
			return Errorf("%s holds a credential; it is not uploaded", in.Path), nil
		}
		content = []byte(red)
	}
	name := filepath.Base(f.Name())
	title := in.Title
	if title == "" {
		title = name
	}
	err = c.Uploader.Upload(ctx, pipeline.Upload{ChannelID: t.Event.ChannelID, ThreadTS: t.Event.RootTS(), Filename: name,
		Title: c.Redactor.Redact(title), Comment: c.Redactor.Redact(in.Comment), Content: content})
	if err != nil {
		return Result{}, err
	}
	if c.Replied != nil {
		c.Replied(ctx) // the file is an answer the person sees
	}
	return Result{Text: fmt.Sprintf("uploaded %s (%d bytes)", name, len(content))}, nil
}

func (c *ChatServer) requestApproval(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Category string `json:"category"`
		Summary  string `json:"summary"`
		Details  string `json:"details"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	in.Category = strings.TrimSpace(in.Category)
	if in.Category == "" || strings.ContainsAny(in.Category, " \t\n") || strings.TrimSpace(in.Summary) == "" {
		return Errorf("category (one word) and summary are required"), nil
	}
	t, ok := TurnFromContext(ctx)
	if !ok || c.Approvals == nil {
		return Errorf("no chat thread to ask in"), nil
	}
	outcome, err := c.Approvals.RequestApproval(ctx, t, in.Category, c.Redactor.Redact(in.Summary), c.Redactor.Redact(in.Details))
	if err != nil {
		return Result{}, err
	}
	return Result{Text: outcome}, nil
}

func (c *ChatServer) reply(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	if strings.TrimSpace(in.Text) == "" {
		return Errorf("text is empty"), nil
	}
	t, ok := TurnFromContext(ctx)
	if !ok {
		return Errorf("no chat thread to reply in"), nil
	}
	ts, err := t.Out.Post(ctx, c.Redactor.Redact(in.Text))
	if err != nil {
		return undelivered(ctx, "posted", err)
	}
	if c.Replied != nil {
		c.Replied(ctx)
	}
	return Result{Text: "posted (ts " + ts + ")"}, nil
}

func (c *ChatServer) edit(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		TS   string `json:"ts"`
		Text string `json:"text"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	if in.TS == "" || strings.TrimSpace(in.Text) == "" {
		return Errorf("ts and text are required"), nil
	}
	t, ok := TurnFromContext(ctx)
	if !ok {
		return Errorf("no chat thread to edit in"), nil
	}
	if err := t.Out.Update(ctx, in.TS, c.Redactor.Redact(in.Text)); err != nil {
		return undelivered(ctx, "edited", err)
	}
	return Result{Text: "edited " + in.TS}, nil
}

// undelivered is the result of a post or an edit the platform did not
// take: an error result that names the platform's reason, so that the
// model knows its words were not seen (and the history keeps them as
// undelivered). The chat client's errors name the method and the
// platform's error code, never a token. A cancelled turn is an error of
// the call itself.
func undelivered(ctx context.Context, what string, err error) (Result, error) {
	if ctx.Err() != nil {
		return Result{}, err
	}
	return Errorf("not delivered: the message was not %s (%v)", what, err), nil
}
