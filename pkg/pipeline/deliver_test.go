package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fakePoster is a pipeline.Poster scripted by its fields; it records the
// calls as "post <channel> <thread> <text>" and "update <ts> ...".
type fakePoster struct {
	PostFn   func(ctx context.Context, m pipeline.Message) (string, error)
	UpdateFn func(ctx context.Context, ts string, m pipeline.Message) error
	calls    []string
}

func (p *fakePoster) Post(ctx context.Context, m pipeline.Message) (string, error) {
	p.calls = append(p.calls, fmt.Sprintf("post %s %s %s", m.ChannelID, m.ThreadTS, m.Text))
	return p.PostFn(ctx, m)
}

func (p *fakePoster) Update(ctx context.Context, ts string, m pipeline.Message) error {
	p.calls = append(p.calls, fmt.Sprintf("update %s %s %s %s", ts, m.ChannelID, m.ThreadTS, m.Text))
	return p.UpdateFn(ctx, ts, m)
}

// countingPoster posts each message at ts 10.1, 10.2, ...
func countingPoster() *fakePoster {
	n := 0
	return &fakePoster{
		PostFn: func(context.Context, pipeline.Message) (string, error) {
			n++
			return fmt.Sprintf("10.%d", n), nil
		},
		UpdateFn: func(context.Context, string, pipeline.Message) error { return nil },
	}
}

// splitBars splits a text at "|", standing in for the length splitter.
func splitBars(text string) []string { return strings.Split(text, "|") }

func outbound(op pipeline.ReplyOp, ts, text string) *pipeline.Event {
	return &pipeline.Event{Kind: pipeline.KindReply, ChannelID: trustedCh, ThreadTS: "1.0", Text: text,
		Reply: &pipeline.Reply{Op: op, TS: ts}}
}

func TestDeliver(t *testing.T) {
	tests := []struct {
		name      string
		ev        *pipeline.Event
		split     func(string) []string
		wantCalls []string
		wantTS    string
	}{
		{"post in one part", outbound(pipeline.ReplyPost, "", "hello"), splitBars,
			[]string{"post C0TEAM 1.0 hello"}, "10.1"},
		{"post split in parts, in order, first ts kept", outbound(pipeline.ReplyPost, "", "one|two|three"), splitBars,
			[]string{"post C0TEAM 1.0 one", "post C0TEAM 1.0 two", "post C0TEAM 1.0 three"}, "10.1"},
		{"splitter returning nothing posts the text", outbound(pipeline.ReplyPost, "", "whole"), func(string) []string { return nil },
			[]string{"post C0TEAM 1.0 whole"}, "10.1"},
		{"update uses the first part", outbound(pipeline.ReplyUpdate, "5.0", "new|overflow"), splitBars,
			[]string{"update 5.0 C0TEAM 1.0 new"}, "5.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := countingPoster()
			h := pipeline.NewDeliver(p, tt.split)
			if err := h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(p.calls, "\n"), strings.Join(tt.wantCalls, "\n"); got != want {
				t.Errorf("calls:\n%s\nwant:\n%s", got, want)
			}
			if tt.ev.Reply.TS != tt.wantTS {
				t.Errorf("Reply.TS = %q, want %q", tt.ev.Reply.TS, tt.wantTS)
			}
		})
	}
}

func TestDeliverErrors(t *testing.T) {
	errPost := errors.New("rate_limited")
	failSecond := countingPoster()
	inner := failSecond.PostFn
	failSecond.PostFn = func(ctx context.Context, m pipeline.Message) (string, error) {
		if m.Text == "two" {
			return "", errPost
		}
		return inner(ctx, m)
	}
	errUpdate := errors.New("message_not_found")
	failUpdate := countingPoster()
	failUpdate.UpdateFn = func(context.Context, string, pipeline.Message) error { return errUpdate }

	tests := []struct {
		name    string
		p       *fakePoster
		ev      *pipeline.Event
		wantIs  error
		wantMsg string
	}{
		{"inbound message", countingPoster(), msg("E1", trustedCh, member, ""), nil, "deliver: a message event reached the end of the chain"},
		{"command", countingPoster(), &pipeline.Event{Kind: pipeline.KindCommand}, nil, "deliver: a command event reached the end of the chain"},
		{"reply without Reply", countingPoster(), &pipeline.Event{Kind: pipeline.KindReply, Text: "x"}, nil, "deliver: a reply event reached the end of the chain"},
		{"unknown op", countingPoster(), outbound(9, "", "x"), nil, "deliver: unknown reply op 9"},
		{"post error names the part", failSecond, outbound(pipeline.ReplyPost, "", "one|two|three"), errPost, "deliver part 2 of 3: rate_limited"},
		{"update error", failUpdate, outbound(pipeline.ReplyUpdate, "5.0", "x"), errUpdate, "message_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := pipeline.NewDeliver(tt.p, splitBars).Handle(context.Background(), tt.ev)
			if err == nil || err.Error() != tt.wantMsg {
				t.Fatalf("err = %v, want %q", err, tt.wantMsg)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("err does not wrap %v", tt.wantIs)
			}
			if tt.wantIs == errPost && len(tt.p.calls) != 2 {
				t.Errorf("posted %d parts after the failure, want to stop at part 2: %q", len(tt.p.calls), tt.p.calls)
			}
		})
	}
}
