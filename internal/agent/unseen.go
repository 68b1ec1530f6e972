package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// ThreadContext gives a turn the messages of its thread the bot has not
// seen, and marks them seen once the turn has stored them
// (*pipeline.ThreadContext).
type ThreadContext interface {
	Unseen(ctx context.Context, ev *pipeline.Event) (pipeline.Unseen, error)
	Seen(ctx context.Context, ev *pipeline.Event) error
}

// unseenNote opens the messages a turn carries before the person's: what
// they are. It is the runtime's, outside any envelope.
const unseenNote = "[runtime] Messages of this thread you had not seen, oldest first; " +
	"your own posts among them are shown as yours. The message to you follows them."

// unseenOmitted is added to unseenNote when the cap left some out.
const unseenOmitted = " (%d older ones are left out.)"

// unseenFailed stands for them when the thread could not be read.
const unseenFailed = "[runtime] This thread's earlier messages could not be read: you see only the message to you."

// turnInput is what the turn adds to the session: the person's message
// (userMessage: words, then the labels of the files it shows), after the messages of the thread the bot had not seen when the
// event carries a mark (Event.Unseen): each person's (or bot's) in its
// envelope, the bot's own as its own (assistant) words. The first
// message is the user's, and so is the last, which holds text.
func (e *Engine) turnInput(ctx context.Context, t *pipeline.Turn, msg anthropic.MessageParam) []anthropic.MessageParam {
	if t.Event.Unseen == "" || e.o.Unseen == nil {
		return []anthropic.MessageParam{msg}
	}
	user := msg.Content
	u, err := e.o.Unseen.Unseen(ctx, t.Event)
	if err != nil {
		e.o.Log.WarnContext(ctx, "read the thread's unseen messages", "thread", t.Event.ThreadKey(), "err", err)
		return []anthropic.MessageParam{anthropic.NewUserMessage(append([]anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(unseenFailed)}, user...)...)}
	}
	if len(u.Messages) == 0 {
		return []anthropic.MessageParam{msg}
	}
	note := unseenNote
	if u.Omitted > 0 {
		note += fmt.Sprintf(unseenOmitted, u.Omitted)
	}
	var out []anthropic.MessageParam
	blocks := []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(note)}
	for _, m := range u.Messages {
		words := withFiles(m)
		if !m.Own {
			blocks = append(blocks, anthropic.NewTextBlock(pipeline.Envelope(m.UserID, m.Role, words)))
			continue
		}
		if len(blocks) > 0 {
			out = append(out, anthropic.NewUserMessage(blocks...))
			blocks = nil
		}
		if n := len(out); out[n-1].Role == anthropic.MessageParamRoleAssistant {
			out[n-1].Content = append(out[n-1].Content, anthropic.NewTextBlock(words))
		} else {
			out = append(out, anthropic.NewAssistantMessage(anthropic.NewTextBlock(words)))
		}
	}
	return append(out, anthropic.NewUserMessage(append(blocks, user...)...))
}

// withFiles is a message's words with the names of its files.
func withFiles(m pipeline.Earlier) string {
	if len(m.Files) == 0 {
		return m.Text
	}
	files := "(files: " + strings.Join(m.Files, ", ") + ")"
	if m.Text == "" {
		return files
	}
	return m.Text + "\n" + files
}

// markSeen clears the thread's unseen mark once the turn's input is
// stored. A failure is logged: the next mention reads them again.
func (e *Engine) markSeen(ctx context.Context, t *pipeline.Turn) {
	if t.Event.Unseen == "" || e.o.Unseen == nil {
		return
	}
	if err := e.o.Unseen.Seen(context.WithoutCancel(ctx), t.Event); err != nil {
		e.o.Log.WarnContext(ctx, "mark the thread's messages seen", "thread", t.Event.ThreadKey(), "err", err)
	}
}
