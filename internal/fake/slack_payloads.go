package fake

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"time"
)

// Builders of the payloads the platform sends over Socket Mode, in its exact
// shapes (see slack-go's slackevents, socketmode tests and interactions.go).
// Every empty id gets a fresh value, so a test sets only what it checks.

// slackPayloadSeq numbers the ids the builders make up.
var slackPayloadSeq atomic.Int64

func slackNext() int64 { return slackPayloadSeq.Add(1) }

// slackEventID is a fresh events_api event id.
func slackEventID() string { return fmt.Sprintf("Ev%09d", slackNext()) }

// slackPayloadTS is a fresh message ts, apart from the ones the fake gives
// the bot's posts.
func slackPayloadTS() string { return fmt.Sprintf("1600000000.%06d", slackNext()%1_000_000) }

// slackTriggerID is a fresh interaction trigger id.
func slackTriggerID() string {
	n := slackNext()
	return fmt.Sprintf("%d.%d.%032x", 1000000000+n, 100000000+n, n)
}

// ChannelTypeOf is the channel_type the platform gives a conversation id:
// "im" for D…, "group" for G…, "channel" otherwise.
func ChannelTypeOf(channel string) string {
	switch {
	case strings.HasPrefix(channel, "D"):
		return "im"
	case strings.HasPrefix(channel, "G"):
		return "group"
	}
	return "channel"
}

func slackOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// EventCallback wraps an inner event (an object with its "type") in the
// events_api outer payload the platform sends; eventID and teamID default to
// a fresh id and DefaultTeamID.
func EventCallback(eventID, teamID string, event any) json.RawMessage {
	eventID, teamID = slackOr(eventID, slackEventID()), slackOr(teamID, DefaultTeamID)
	out, _ := json.Marshal(map[string]any{
		"token": "fake-verification-token", "team_id": teamID, "api_app_id": DefaultAppID,
		"event": event, "type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(),
		"authorizations": []map[string]any{{
			"enterprise_id": nil, "team_id": teamID, "user_id": DefaultBotUserID,
			"is_bot": true, "is_enterprise_install": false,
		}},
		"is_ext_shared_channel": false,
		"event_context":         "4-fake-" + eventID,
	})
	return out
}

// File is a file attached to a message, as the platform describes it.
type File struct {
	ID                 string
	Name               string
	Title              string
	MimeType           string
	Size               int64
	URLPrivateDownload string
}

func (f File) wire() map[string]any {
	return map[string]any{
		"id": f.ID, "created": 1600000000, "timestamp": 1600000000, "name": f.Name, "title": slackOr(f.Title, f.Name),
		"mimetype": f.MimeType, "filetype": strings.TrimPrefix(path.Ext(f.Name), "."),
		"user": DefaultBotUserID, "size": f.Size, "mode": "hosted", "is_external": false, "is_public": false,
		"url_private": slackViewURL(f.URLPrivateDownload), "url_private_download": f.URLPrivateDownload,
	}
}

// slackViewURL is the url_private of a file whose url_private_download is
// download: the same address without its "download/" element, as the
// platform's (files-pri/T-F/name beside files-pri/T-F/download/name).
func slackViewURL(download string) string {
	return strings.Replace(download, "/download/", "/", 1)
}

// Message is a message event: in a channel (C…), a private channel (G…) or
// a DM (D…), top level or in a thread, from a person or a bot.
type Message struct {
	EventID      string // default: fresh
	TeamID       string // default DefaultTeamID
	User         string
	Channel      string
	ChannelType  string // default from the channel id (ChannelTypeOf)
	TS           string // default: fresh
	ThreadTS     string // the thread's root; "" at top level
	ParentUserID string // who started the thread; defaults to User in a thread
	Text         string
	BotID        string // set for a bot's message (the bot's own posts too)
	Subtype      string // "bot_message", "file_share", ...
	Files        []File
	// ActionToken is the event's action_token (the platform gives one
	// per message; it acts for User in assistant.search.context).
	ActionToken string
}

// inner is the message's inner event.
func (m Message) inner(typ string) map[string]any {
	ts := slackOr(m.TS, slackPayloadTS())
	ev := map[string]any{"type": typ, "text": m.Text, "ts": ts, "event_ts": ts, "channel": m.Channel,
		"team": slackOr(m.TeamID, DefaultTeamID)}
	if m.User != "" {
		ev["user"] = m.User
	}
	if m.BotID == "" && m.Subtype == "" {
		ev["client_msg_id"] = fmt.Sprintf("c714568f-67df-42d7-a343-%012d", slackNext())
	}
	if m.ActionToken != "" {
		ev["action_token"] = m.ActionToken
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
		ev["parent_user_id"] = slackOr(m.ParentUserID, m.User)
	}
	if m.BotID != "" {
		ev["bot_id"] = m.BotID
		ev["bot_profile"] = map[string]any{"id": m.BotID, "app_id": DefaultAppID, "name": "bot", "team_id": ev["team"]}
	}
	if m.Subtype != "" {
		ev["subtype"] = m.Subtype
	}
	if len(m.Files) > 0 {
		files := make([]map[string]any, len(m.Files))
		for i, f := range m.Files {
			files[i] = f.wire()
		}
		ev["files"] = files
		ev["upload"] = false
	}
	if m.Text != "" {
		ev["blocks"] = []map[string]any{{"type": "rich_text", "block_id": "fake", "elements": []map[string]any{{
			"type": "rich_text_section", "elements": []map[string]any{{"type": "text", "text": m.Text}},
		}}}}
	}
	return ev
}

// Payload is the events_api payload of the message event.
func (m Message) Payload() json.RawMessage {
	ev := m.inner("message")
	ev["channel_type"] = slackOr(m.ChannelType, ChannelTypeOf(m.Channel))
	return EventCallback(m.EventID, m.TeamID, ev)
}

// AppMention is an app_mention event: a message that mentions the bot, in a
// channel (the platform sends no channel_type with it).
type AppMention struct {
	EventID  string // default: fresh
	TeamID   string // default DefaultTeamID
	User     string
	Channel  string
	TS       string // default: fresh; the same ts as the twin message event
	ThreadTS string
	Text     string // usually starts with "<@U0BOT> "
}

// Payload is the events_api payload of the mention.
func (a AppMention) Payload() json.RawMessage {
	m := Message{TeamID: a.TeamID, User: a.User, Channel: a.Channel, TS: a.TS, ThreadTS: a.ThreadTS, Text: a.Text}
	ev := m.inner("app_mention")
	delete(ev, "parent_user_id")
	return EventCallback(a.EventID, a.TeamID, ev)
}

// MessageChanged is a message_changed event: User edited the message at
// EditedTS to Text.
type MessageChanged struct {
	EventID      string // default: fresh
	TeamID       string // default DefaultTeamID
	Channel      string
	ChannelType  string // default from the channel id
	TS           string // the event's own ts; default: fresh
	EditedTS     string // the edited message's ts
	ThreadTS     string
	User         string
	Text         string // the new text
	PreviousText string
	BotID        string // set when a bot's message was edited
}

// Payload is the events_api payload of the edit.
func (m MessageChanged) Payload() json.RawMessage {
	ts := slackOr(m.TS, slackPayloadTS())
	msg := map[string]any{"type": "message", "user": m.User, "text": m.Text, "ts": m.EditedTS,
		"edited": map[string]any{"user": m.User, "ts": ts}}
	prev := map[string]any{"type": "message", "user": m.User, "text": m.PreviousText, "ts": m.EditedTS}
	if m.ThreadTS != "" {
		msg["thread_ts"], prev["thread_ts"] = m.ThreadTS, m.ThreadTS
	}
	if m.BotID != "" {
		msg["bot_id"], prev["bot_id"] = m.BotID, m.BotID
	}
	ev := map[string]any{"type": "message", "subtype": "message_changed", "hidden": true,
		"message": msg, "previous_message": prev, "channel": m.Channel,
		"channel_type": slackOr(m.ChannelType, ChannelTypeOf(m.Channel)), "ts": ts, "event_ts": ts}
	return EventCallback(m.EventID, m.TeamID, ev)
}

// BlockActions is a click on a button of a message (an interactive
// block_actions payload).
type BlockActions struct {
	TeamID      string // default DefaultTeamID
	User        string
	Channel     string
	MessageTS   string // the ts of the message holding the button
	ThreadTS    string // the thread of that message; "" at top level
	ActionID    string // "approve", "deny", "always", "feedback"
	Value       string
	Type        string // the element's type; default "button" ("feedback_buttons" for feedback)
	BlockID     string // default "actions"
	TriggerID   string // default: fresh
	ResponseURL string // default: a hooks.slack.com address
	MessageText string
}

// Payload is the interactive payload of the click.
func (b BlockActions) Payload() json.RawMessage {
	team := slackOr(b.TeamID, DefaultTeamID)
	trigger := slackOr(b.TriggerID, slackTriggerID())
	container := map[string]any{"type": "message", "message_ts": b.MessageTS, "channel_id": b.Channel, "is_ephemeral": false}
	msg := map[string]any{"type": "message", "subtype": "bot_message", "text": b.MessageText, "ts": b.MessageTS,
		"bot_id": DefaultBotID, "user": DefaultBotUserID}
	if b.ThreadTS != "" {
		container["thread_ts"] = b.ThreadTS
		msg["thread_ts"] = b.ThreadTS
	}
	out, _ := json.Marshal(map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": b.User, "username": strings.ToLower(b.User), "name": strings.ToLower(b.User), "team_id": team},
		"api_app_id": DefaultAppID, "token": "fake-verification-token",
		"container": container, "trigger_id": trigger,
		"team":       map[string]any{"id": team, "domain": "fake-workspace"},
		"enterprise": nil, "is_enterprise_install": false,
		"channel":      map[string]any{"id": b.Channel, "name": "fake-channel"},
		"message":      msg,
		"state":        map[string]any{"values": map[string]any{}},
		"response_url": slackOr(b.ResponseURL, "https://hooks.slack.com/actions/"+team+"/1/"+trigger),
		"actions": []map[string]any{{
			"action_id": b.ActionID, "block_id": slackOr(b.BlockID, "actions"),
			"text":  map[string]any{"type": "plain_text", "text": b.ActionID, "emoji": true},
			"value": b.Value, "type": slackOr(b.Type, "button"), "action_ts": slackPayloadTS(),
		}},
	})
	return out
}

// SlashCommand is a slash command typed in a channel or a DM.
type SlashCommand struct {
	TeamID      string // default DefaultTeamID
	Command     string // "/ingest"
	Text        string // the arguments
	User        string
	Channel     string
	TriggerID   string // default: fresh
	ResponseURL string // default: a hooks.slack.com address
}

// Payload is the slash_commands payload of the command.
func (c SlashCommand) Payload() json.RawMessage {
	team := slackOr(c.TeamID, DefaultTeamID)
	trigger := slackOr(c.TriggerID, slackTriggerID())
	out, _ := json.Marshal(map[string]any{
		"token": "fake-verification-token", "team_id": team, "team_domain": "fake-workspace",
		"channel_id": c.Channel, "channel_name": "fake-channel", "user_id": c.User, "user_name": strings.ToLower(c.User),
		"command": c.Command, "text": c.Text, "api_app_id": DefaultAppID, "is_enterprise_install": "false",
		"response_url": slackOr(c.ResponseURL, "https://hooks.slack.com/commands/"+team+"/1/"+trigger),
		"trigger_id":   trigger,
	})
	return out
}

// AgentSessionStopped is a click on the stop button of a thread's agent
// session (docs.slack.dev, "agent_session_stopped").
type AgentSessionStopped struct {
	EventID  string // default: fresh
	TeamID   string // default DefaultTeamID
	User     string // who clicked
	Channel  string
	ThreadTS string   // the session's thread
	Streams  []string // the bot's streamed messages the platform stopped
	EventTS  string   // default: fresh
}

// Payload is the events_api payload of the click.
func (a AgentSessionStopped) Payload() json.RawMessage {
	streams := a.Streams
	if streams == nil {
		streams = []string{} // the platform sends an empty array, not null
	}
	return EventCallback(a.EventID, a.TeamID, map[string]any{"type": "agent_session_stopped", "channel": a.Channel,
		"thread_ts": a.ThreadTS, "user": a.User, "streaming_message_ts": streams,
		"event_ts": slackOr(a.EventTS, slackPayloadTS())})
}

// AppHomeOpened is a person opening the app's home: its DM (tab
// "messages") or its Home tab ("home").
type AppHomeOpened struct {
	EventID string // default: fresh
	TeamID  string // default DefaultTeamID
	User    string
	Channel string // the DM between the app and User
	Tab     string // default "messages"
	EventTS string // default: fresh
}

// Payload is the events_api payload of the event.
func (a AppHomeOpened) Payload() json.RawMessage {
	return EventCallback(a.EventID, a.TeamID, map[string]any{"type": "app_home_opened", "user": a.User,
		"channel": a.Channel, "tab": slackOr(a.Tab, "messages"), "event_ts": slackOr(a.EventTS, slackPayloadTS())})
}
