package fake

import (
	"strconv"
	"strings"
)

// SearchMessage is a message assistant.search.context may find.
type SearchMessage struct {
	Channel     string
	ChannelName string
	// ChannelType is public_channel (default), private_channel, mpim or im.
	ChannelType string
	TS          string
	User        string
	Text        string
	// Members are who may see it outside a public channel.
	Members []string
}

// ActionTokenFor is the action token the fake accepts as acting for user:
// a test puts it on the person's Message.
func ActionTokenFor(user string) string { return "act-" + user }

// searchContext answers assistant.search.context: the Searchable messages
// with a word of the query, of the channel types asked (default
// public_channel), that the action token's person may see. An action
// token the fake did not make is invalid_action_token.
func (s *Slack) searchContext(c *slackCall) (map[string]any, string, func()) {
	tok := c.params.Get("action_token")
	user, ok := strings.CutPrefix(tok, "act-")
	if !ok || user == "" {
		return nil, "invalid_action_token", nil
	}
	types := map[string]bool{"public_channel": true}
	if v := c.params.Get("channel_types"); v != "" {
		types = map[string]bool{}
		for _, t := range strings.Split(v, ",") {
			types[t] = true
		}
	}
	limit, _ := strconv.Atoi(c.params.Get("limit"))
	if limit <= 0 || limit > 20 {
		limit = 20
	}
	words := strings.Fields(strings.ToLower(c.params.Get("query")))
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []map[string]any
	for _, m := range s.Searchable {
		ct := slackOr(m.ChannelType, "public_channel")
		if !types[ct] || (ct != "public_channel" && !contains(m.Members, user)) {
			continue
		}
		hit := false
		for _, w := range words {
			hit = hit || strings.Contains(strings.ToLower(m.Text), w)
		}
		if !hit || len(found) == limit {
			continue
		}
		found = append(found, map[string]any{"author_user_id": m.User, "author_name": strings.ToLower(m.User),
			"team_id": DefaultTeamID, "channel_id": m.Channel, "channel_name": m.ChannelName, "message_ts": m.TS,
			"content": m.Text, "is_author_bot": false,
			"permalink": "https://example.slack.com/archives/" + m.Channel + "/p" + strings.ReplaceAll(m.TS, ".", "")})
	}
	return map[string]any{"results": map[string]any{"messages": found}, "response_metadata": map[string]any{"next_cursor": ""}}, "", nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
