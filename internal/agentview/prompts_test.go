package agentview_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/persona-runtime/agent/internal/agentview"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// chat records the prompts offered, answering err.
type chat struct {
	offered []string
	err     error
}

func (c *chat) SuggestPrompts(_ context.Context, channelID string, prompts []string) error {
	c.offered = append(c.offered, channelID+": "+prompts[0])
	return c.err
}

// A DM opened is offered the persona's prompts; a persona without any
// offers nothing, and a refused offer is no failure of the event.
func TestOpenedOffersThePrompts(t *testing.T) {
	ev := &pipeline.Event{Kind: pipeline.KindHome, ChannelID: "D1", UserID: "U1"}
	for _, tt := range []struct {
		name    string
		prompts []string
		err     error
		want    []string
	}{
		{"prompts", []string{"What can you do?", "Summarise my week"}, nil, []string{"D1: What can you do?"}},
		{"none", nil, nil, nil},
		{"refused", []string{"What can you do?"}, errors.New("unknown_method"), []string{"D1: What can you do?"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &chat{err: tt.err}
			p := &agentview.Prompts{Chat: c, Prompts: tt.prompts, Log: slog.New(slog.DiscardHandler)}
			if err := p.Opened(t.Context(), ev, pipeline.Access{UserID: "U1"}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.offered, tt.want) {
				t.Fatalf("offered %q, want %q", c.offered, tt.want)
			}
		})
	}
}
