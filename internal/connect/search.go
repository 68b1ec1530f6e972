package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// Searcher is the platform's real-time search (slackio.Chat): the
// workspace as the person whose message gave actionToken sees it.
type Searcher interface {
	SearchContext(ctx context.Context, query, actionToken string, channelTypes []string, limit int) ([]pipeline.SearchHit, error)
}

// Search is the mcp__agent_chat__search tool.
type Search struct {
	Chat Searcher
	// Redact scrubs secrets and the persona's redaction patterns from
	// what the search found.
	Redact func(string) string
}

// Search's limits: the platform answers at most 20 messages a call.
const (
	searchDefault = 10
	searchMax     = 20
	searchChars   = 1_000 // per message
)

// msgNoActionToken answers a search with no person's message to act for
// (pinned: interfaces.md).
const msgNoActionToken = "search needs a person's message to act for"

// Tools returns the search tool.
func (s *Search) Tools() []tools.Tool {
	return []tools.Tool{{
		Name: tools.ChatSearch,
		Description: "Search the workspace's messages as the person who wrote the message you are answering sees it: " +
			"public channels, and in a direct message with them also the private conversations they are in. " +
			"Each result gives its channel, ts, author and text. It works only while answering a person's message.",
		Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to search for."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"Messages to return (default 10)."}},"required":["query"],"additionalProperties":false}`),
		Call: s.call,
	}}
}

func (s *Search) call(ctx context.Context, input json.RawMessage) (tools.Result, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(orEmpty(input), &in); err != nil {
		return tools.Errorf("invalid input: %v", err), nil
	}
	in.Query = strings.TrimSpace(in.Query)
	switch {
	case in.Query == "":
		return tools.Errorf("query is required"), nil
	case in.Limit <= 0:
		in.Limit = searchDefault
	case in.Limit > searchMax:
		in.Limit = searchMax
	}
	t, ok := tools.TurnFromContext(ctx)
	if !ok || t.Event == nil || t.Event.ActionToken == "" || s.Chat == nil {
		return tools.Errorf(msgNoActionToken), nil
	}
	hits, err := s.Chat.SearchContext(ctx, in.Query, t.Event.ActionToken, channelTypes(t.Event), in.Limit)
	if err != nil {
		return tools.Errorf("search: %s", s.redact(err.Error())), nil
	}
	if len(hits) == 0 {
		return tools.Result{Text: "no messages found"}, nil
	}
	var b strings.Builder
	for _, h := range hits {
		text := h.Text
		if len(text) > searchChars {
			text = text[:searchChars] + "…"
		}
		author := "<@" + h.AuthorID + ">"
		if h.IsBot {
			author += " (bot)"
		}
		where := "<#" + h.ChannelID + ">"
		if h.ChannelName != "" {
			where = "<#" + h.ChannelID + "|" + h.ChannelName + ">"
		}
		fmt.Fprintf(&b, "channel %s ts %s author %s\n%s\n\n", where, h.TS, author, s.redact(text))
	}
	return tools.Result{Text: strings.TrimSpace(b.String())}, nil
}

// channelTypes are the conversations a search may read from where the
// turn is: from the person's own DM with the persona, all they can see;
// from a channel, public channels only, so that nothing of a DM or a
// private conversation reaches a place more public than it was.
func channelTypes(ev *pipeline.Event) []string {
	if ev.IsDM() {
		return []string{"public_channel", "private_channel", "mpim", "im"}
	}
	return []string{"public_channel"}
}

func (s *Search) redact(text string) string {
	if s.Redact == nil {
		return text
	}
	return s.Redact(text)
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}
