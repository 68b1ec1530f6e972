package tools

import (
	"context"
	"encoding/json"
	"strings"
)

func (c *ChatServer) react(ctx context.Context, input json.RawMessage) (Result, error) {
	return c.reaction(ctx, input, true)
}

func (c *ChatServer) unreact(ctx context.Context, input json.RawMessage) (Result, error) {
	return c.reaction(ctx, input, false)
}

// reaction adds or removes the bot's reaction on a message of the turn's
// conversation: the one given by ts, by default the message being
// answered. The conversation is always the turn's: a ts of another one
// names no message there, and the platform refuses it.
func (c *ChatServer) reaction(ctx context.Context, input json.RawMessage, add bool) (Result, error) {
	var in struct {
		Name string `json:"name"`
		TS   string `json:"ts"`
	}
	if err := decodeConfined(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	name, ok := emojiName(in.Name)
	if !ok {
		return Errorf("name must be an emoji's name without colons, like eyes or white_check_mark"), nil
	}
	if in.TS != "" && !validTS(in.TS) {
		return Errorf("ts must be a message ts like 1700000000.000100"), nil
	}
	t, refused := c.readTurn(ctx)
	if refused != nil {
		return *refused, nil
	}
	ts := in.TS
	if ts == "" {
		ts = t.Event.TS
	}
	if ts == "" {
		return Errorf("no message is being answered: give the ts of the message to react to"), nil
	}
	if add {
		if err := c.Reader.React(ctx, t.Event.ChannelID, ts, name); err != nil {
			return c.reactionFailed(ctx, "not reacted", err)
		}
		return Result{Text: "reacted :" + name + ": to " + ts}, nil
	}
	if err := c.Reader.Unreact(ctx, t.Event.ChannelID, ts, name); err != nil {
		return c.reactionFailed(ctx, "reaction not removed", err)
	}
	return Result{Text: "removed :" + name + ": from " + ts}, nil
}

// reactionFailed says why; a message the platform cannot find in this
// conversation is said as such.
func (c *ChatServer) reactionFailed(ctx context.Context, what string, err error) (Result, error) {
	res, rerr := c.readFailed(ctx, what, err)
	if rerr == nil && strings.Contains(err.Error(), "message_not_found") {
		res.Text += " (no message with that ts in this conversation)"
	}
	return res, rerr
}

// emojiName reads an emoji's name as the model may write it (":eyes:" or
// "eyes", with a skin tone "thumbsup::skin-tone-2"); ok is false for
// anything the platform could not name.
func emojiName(s string) (string, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, ":"), ":")
	base, tone, toned := strings.Cut(s, "::")
	if base == "" || len(s) > 100 || toned && (len(tone) != 11 || !strings.HasPrefix(tone, "skin-tone-") || tone[10] < '2' || tone[10] > '6') {
		return "", false
	}
	for _, r := range base {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && !strings.ContainsRune("_+-'", r) {
			return "", false
		}
	}
	return s, true
}
