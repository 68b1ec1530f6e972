package pipeline

import (
	"context"
	"strings"
	"time"
)

// Streamer is implemented by a turn's Outbox that can show a reply while
// the model writes it.
type Streamer interface {
	// StartStream returns a stream for one reply; nothing is shown until
	// its first Preview.
	StartStream() ReplyStream
}

// ReplyStream is one reply shown while it is written: previews of the
// text so far, then the final text, which is exactly what Post would have
// shown. A stream is used by one goroutine at a time.
type ReplyStream interface {
	// Preview shows markdown, the text so far (each a prefix of the next).
	Preview(ctx context.Context, markdown string) error
	// Started reports whether a preview was shown.
	Started() bool
	// Interval is the least time to leave between previews: short on the
	// platform's streaming API, longer when the message is edited.
	Interval() time.Duration
	// Finish replaces the previews with the final text and returns the
	// message's ts.
	Finish(ctx context.Context, markdown string) (string, error)
	// Stop ends a stream that will not be finished (the call failed); the
	// preview stays as it is.
	Stop(ctx context.Context)
}

// Preview intervals: the streaming API takes appends often; edits are
// rate-limited harder by the platform.
const (
	streamInterval = 300 * time.Millisecond
	editInterval   = time.Second
)

var _ Streamer = (*outbox)(nil)

// StartStream implements Streamer.
func (o *outbox) StartStream() ReplyStream { return &outStream{o: o} }

// outStream is a ReplyStream through the outbox's chain (markup, deliver).
type outStream struct {
	o        *outbox
	ts       string
	native   bool
	shown    string // the markdown shown so far
	finished bool
}

func (s *outStream) Started() bool { return s.ts != "" }

func (s *outStream) Interval() time.Duration {
	if s.ts != "" && !s.native {
		return editInterval
	}
	return streamInterval
}

func (s *outStream) event(op ReplyOp, text string) *Event {
	return &Event{Kind: KindReply, ChannelID: s.o.channel, ThreadTS: s.o.thread, Text: text,
		Reply: &Reply{Op: op, TS: s.ts, Markdown: true, For: s.o.event, Native: s.native,
			RecipientUser: s.o.user, RecipientTeam: s.o.team}}
}

func (s *outStream) Preview(ctx context.Context, markdown string) error {
	if s.finished || markdown == s.shown || !strings.HasPrefix(markdown, s.shown) {
		return nil
	}
	if s.ts == "" {
		// A preview is not yet an answer: the event is answered when the
		// reply is finished, so that a crash in between resumes the turn
		// rather than leaving half a reply.
		ev := s.event(ReplyStreamStart, markdown)
		s.o.progress.Answering()
		if err := s.o.next.Handle(ctx, ev); err != nil {
			return err
		}
		s.ts, s.native, s.shown = ev.Reply.TS, ev.Reply.Native, markdown
		return nil
	}
	ev := s.event(ReplyStreamAppend, markdown)
	ev.Reply.Delta = markdown[len(s.shown):]
	if err := s.o.next.Handle(ctx, ev); err != nil {
		return err
	}
	s.shown = markdown
	return nil
}

func (s *outStream) Finish(ctx context.Context, markdown string) (string, error) {
	if s.ts == "" {
		return s.o.Post(ctx, markdown)
	}
	s.Stop(ctx)
	ev := s.event(ReplyUpdate, markdown)
	ev.Reply.Overflow = true
	if err := s.o.next.Handle(ctx, ev); err != nil {
		return "", err
	}
	s.o.progress.Answer()
	s.o.lastTS, s.o.lastText, s.o.lastTable = ev.Reply.LastTS, ev.Reply.LastText, ev.Reply.LastTable
	return s.ts, nil
}

func (s *outStream) Stop(ctx context.Context) {
	if s.finished || s.ts == "" {
		return
	}
	s.finished = true
	if s.native {
		_ = s.o.next.Handle(ctx, s.event(ReplyStreamStop, ""))
	}
}
