package pipeline_test

import (
	"context"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

func convertFake(md string) string { return "mrkdwn(" + md + ")" }

func TestMarkup(t *testing.T) {
	tests := []struct {
		name         string
		ev           *pipeline.Event
		wantText     string
		wantMarkdown bool
	}{
		{"reply with markdown converted",
			&pipeline.Event{Kind: pipeline.KindReply, Text: "**hi**", Reply: &pipeline.Reply{Op: pipeline.ReplyPost, Markdown: true}},
			"mrkdwn(**hi**)", false},
		{"update with markdown converted",
			&pipeline.Event{Kind: pipeline.KindReply, Text: "# t", Reply: &pipeline.Reply{Op: pipeline.ReplyUpdate, TS: "5.0", Markdown: true}},
			"mrkdwn(# t)", false},
		{"reply without markdown untouched",
			&pipeline.Event{Kind: pipeline.KindReply, Text: "*already*", Reply: &pipeline.Reply{Op: pipeline.ReplyPost}},
			"*already*", false},
		{"inbound message untouched",
			&pipeline.Event{Kind: pipeline.KindMessage, Text: "**hi**"}, "**hi**", false},
		{"inbound command untouched",
			&pipeline.Event{Kind: pipeline.KindCommand, Text: "**hi**", Command: &pipeline.Command{Name: "/help"}}, "**hi**", false},
		{"reply without Reply untouched",
			&pipeline.Event{Kind: pipeline.KindReply, Text: "**hi**"}, "**hi**", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tracer, sr := newTracer()
			next := &terminal{}
			h := pipeline.Chain(next, pipeline.NewMarkup(tracer, nil, convertFake))
			if err := h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if !next.ran() {
				t.Fatal("next did not run")
			}
			if next.ev.Text != tt.wantText {
				t.Errorf("next saw %q, want %q", next.ev.Text, tt.wantText)
			}
			if next.ev.Reply != nil && next.ev.Reply.Markdown != tt.wantMarkdown {
				t.Errorf("Markdown = %v, want %v", next.ev.Reply.Markdown, tt.wantMarkdown)
			}
			assertSpan(t, sr, "pipeline.markup", pipeline.OutcomePass, "")
		})
	}
}
