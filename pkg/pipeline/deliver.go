package pipeline

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Poster posts and edits messages on the chat platform.
type Poster interface {
	Post(ctx context.Context, m Message) (ts string, err error)
	Update(ctx context.Context, ts string, m Message) error
}

// StreamPoster is a Poster that can also write a message while it is
// being written (the platform's streaming API). StartStream fails with an
// error when the platform refuses it; the message is then posted and
// edited instead.
type StreamPoster interface {
	Poster
	StartStream(ctx context.Context, m Message, markdown string) (ts string, err error)
	AppendStream(ctx context.Context, channelID, ts, markdown string) error
	StopStream(ctx context.Context, channelID, ts string) error
}

// NewDeliver returns the terminal handler of the chain: it delivers an
// outbound reply. A post longer than the platform's message limit is split
// into several messages by split; an edit that is too long keeps the first
// part. After a post, ev.Reply.TS holds the ts of the first message posted.
func NewDeliver(p Poster, split func(text string) []string) Handler {
	if p == nil || split == nil {
		panic("pipeline: NewDeliver needs a Poster and a splitter")
	}
	return HandlerFunc(func(ctx context.Context, ev *Event) error {
		if ev.Kind != KindReply || ev.Reply == nil {
			return fmt.Errorf("deliver: a %s event reached the end of the chain", ev.Kind)
		}
		ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("chat").Start(ctx, chatSpan(ev.Reply.Op),
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("messaging.system", "slack"),
				attribute.String("messaging.destination.name", ev.ChannelID)))
		defer span.End()
		parts := split(ev.Text)
		span.SetAttributes(attribute.Int("chat.parts", len(parts)), attribute.Int("chat.text_bytes", len(ev.Text)))
		if len(parts) == 0 {
			parts = []string{ev.Text}
		}
		msg := func(text string) Message {
			return Message{ChannelID: ev.ChannelID, ThreadTS: ev.ThreadTS, Text: text, For: ev.Reply.For,
				RecipientUser: ev.Reply.RecipientUser, RecipientTeam: ev.Reply.RecipientTeam}
		}
		sp, canStream := p.(StreamPoster)
		switch ev.Reply.Op {
		case ReplyStreamStart:
			if canStream {
				ts, err := sp.StartStream(ctx, msg(""), ev.Reply.Raw)
				if err == nil {
					ev.Reply.TS, ev.Reply.Native = ts, true
					return nil
				}
				span.AddEvent("stream refused: posting and editing instead", trace.WithAttributes(attribute.String("error", err.Error())))
			}
			ts, err := p.Post(ctx, msg(parts[0]))
			ev.Reply.TS = ts
			return err
		case ReplyStreamAppend:
			if ev.Reply.Native && canStream {
				return sp.AppendStream(ctx, ev.ChannelID, ev.Reply.TS, ev.Reply.Delta)
			}
			return p.Update(ctx, ev.Reply.TS, msg(parts[0]))
		case ReplyStreamStop:
			if canStream {
				return sp.StopStream(ctx, ev.ChannelID, ev.Reply.TS)
			}
			return nil
		case ReplyUpdate:
			err := p.Update(ctx, ev.Reply.TS, Message{ChannelID: ev.ChannelID, ThreadTS: ev.ThreadTS, Text: parts[0],
				Feedback: ev.Reply.Feedback, Table: oneTable(ev.Reply.Table, parts)})
			ev.Reply.LastTS, ev.Reply.LastText, ev.Reply.LastTable = ev.Reply.TS, parts[0], oneTable(ev.Reply.Table, parts)
			if err == nil && ev.Reply.Overflow {
				for _, part := range parts[1:] {
					ts, perr := p.Post(ctx, Message{ChannelID: ev.ChannelID, ThreadTS: ev.ThreadTS, Text: part, For: ev.Reply.For})
					if perr != nil {
						err = fmt.Errorf("deliver the rest of a long reply: %w", perr)
						break
					}
					ev.Reply.LastTS, ev.Reply.LastText = ts, part
				}
			}
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		case ReplyPost:
			for i, part := range parts {
				last := i == len(parts)-1
				ts, err := p.Post(ctx, Message{ChannelID: ev.ChannelID, ThreadTS: ev.ThreadTS, Text: part, For: ev.Reply.For,
					Feedback: ev.Reply.Feedback && last, Table: oneTable(ev.Reply.Table, parts)})
				if err != nil {
					span.RecordError(err)
					span.SetStatus(codes.Error, err.Error())
					return fmt.Errorf("deliver part %d of %d: %w", i+1, len(parts), err)
				}
				if i == 0 {
					ev.Reply.TS = ts
				}
				ev.Reply.LastTS, ev.Reply.LastText, ev.Reply.LastTable = ts, part, oneTable(ev.Reply.Table, parts)
			}
			return nil
		}
		return fmt.Errorf("deliver: unknown reply op %d", ev.Reply.Op)
	})
}

// chatSpan is the span name of a reply's delivery: chat.post or chat.update.
func chatSpan(op ReplyOp) string {
	switch op {
	case ReplyUpdate:
		return "chat.update"
	case ReplyStreamStart:
		return "chat.stream_start"
	case ReplyStreamAppend:
		return "chat.stream_append"
	case ReplyStreamStop:
		return "chat.stream_stop"
	}
	return "chat.post"
}

// oneTable is the table a delivered message shows natively: only a reply
// that fits one message (a split one is shown as text, as before).
func oneTable(t *Table, parts []string) *Table {
	if len(parts) != 1 {
		return nil
	}
	return t
}
