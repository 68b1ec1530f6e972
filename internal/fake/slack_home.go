package fake

import (
	"context"
	"encoding/json"
	"strings"
)

// The App Home tab (docs.slack.dev, views.publish, app_home_opened,
// block_actions from a view).

// View is a views.publish call: the person it is for and its view.
type View struct {
	User   string
	Type   string          // "home"
	Blocks json.RawMessage // the view's blocks
	Raw    json.RawMessage // the whole view as sent
}

// slackMaxViewBlocks is the most blocks a Home view takes.
const slackMaxViewBlocks = 100

// publishView records a Home view (views.publish): a user_id, a view of
// type home with at most 100 blocks; HomeDisabled answers not_enabled.
func (s *Slack) publishView(c *slackCall) (map[string]any, string, func()) {
	user := c.params.Get("user_id")
	var v struct {
		Type   string            `json:"type"`
		Blocks []json.RawMessage `json:"blocks"`
	}
	raw := c.params.Get("view")
	switch {
	case user == "":
		return nil, "invalid_arguments", nil
	case json.Unmarshal([]byte(raw), &v) != nil || v.Type != "home":
		return nil, "invalid_arguments", nil
	case len(v.Blocks) > slackMaxViewBlocks:
		return nil, "invalid_blocks", nil
	case len(raw) > 250_000:
		return nil, "view_too_large", nil
	}
	blocks, _ := json.Marshal(v.Blocks)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.views = append(s.views, View{User: user, Type: v.Type, Blocks: blocks, Raw: json.RawMessage(raw)})
	s.notify()
	return map[string]any{"view": map[string]any{"id": "V" + strings.ToUpper(user), "type": "home", "blocks": v.Blocks}}, "", nil
}

// Views returns the views.publish calls so far, in order.
func (s *Slack) Views() []View { return slackCopy(s, &s.views) }

// WaitForView is WaitForPost for views.publish calls.
func (s *Slack) WaitForView(ctx context.Context, match func(View) bool) (View, error) {
	return slackWait(ctx, s, "view", &s.views, match)
}

// HomeClick is a click on a button of a person's Home tab: a block_actions
// payload whose container is the view, with no channel and no message.
type HomeClick struct {
	TeamID    string // default DefaultTeamID
	User      string
	ActionID  string
	Value     string
	TriggerID string // default: fresh
}

// Payload is the interactive payload of the click.
func (h HomeClick) Payload() json.RawMessage {
	team := slackOr(h.TeamID, DefaultTeamID)
	out, _ := json.Marshal(map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": h.User, "username": strings.ToLower(h.User), "team_id": team},
		"api_app_id": DefaultAppID, "token": "fake-verification-token",
		"container":  map[string]any{"type": "view", "view_id": "V" + strings.ToUpper(h.User)},
		"trigger_id": slackOr(h.TriggerID, slackTriggerID()),
		"team":       map[string]any{"id": team, "domain": "fake-workspace"},
		"view":       map[string]any{"id": "V" + strings.ToUpper(h.User), "type": "home"},
		"actions": []map[string]any{{"action_id": h.ActionID, "block_id": "home", "value": h.Value, "type": "button",
			"action_ts": slackPayloadTS()}},
	})
	return out
}
