package slackio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Wire shapes of the payloads, decoded leniently: only the fields the
// pipeline uses, so that a field slack-go's types reject cannot cost a
// delivery.
type (
	wireEventsAPI struct {
		Type    string          `json:"type"`
		TeamID  string          `json:"team_id"`
		EventID string          `json:"event_id"`
		Event   json.RawMessage `json:"event"`
	}
	wireMessage struct {
		Type        string       `json:"type"`
		Subtype     string       `json:"subtype"`
		Team        string       `json:"team"`
		Channel     string       `json:"channel"`
		ChannelType string       `json:"channel_type"`
		User        string       `json:"user"`
		BotID       string       `json:"bot_id"`
		TS          string       `json:"ts"`
		ThreadTS    string       `json:"thread_ts"`
		ParentUser  string       `json:"parent_user_id"`
		Text        string       `json:"text"`
		Files       []wireFile   `json:"files"`
		Message     *wireMessage `json:"message"` // message_changed: the message as edited
		// ActionToken acts as the sender on this message (real-time
		// search); older DM payloads nest it in assistant_thread.
		ActionToken     string `json:"action_token"`
		AssistantThread *struct {
			ActionToken string `json:"action_token"`
		} `json:"assistant_thread"`
	}
	wireFile struct {
		ID                 string `json:"id"`
		Name               string `json:"name"`
		MimeType           string `json:"mimetype"`
		Size               int64  `json:"size"`
		URLPrivate         string `json:"url_private"`
		URLPrivateDownload string `json:"url_private_download"`
	}
	wireInteraction struct {
		Type        string `json:"type"`
		TriggerID   string `json:"trigger_id"`
		ResponseURL string `json:"response_url"`
		User        struct {
			ID string `json:"id"`
		} `json:"user"`
		Team *struct {
			ID string `json:"id"`
		} `json:"team"`
		Channel *struct {
			ID string `json:"id"`
		} `json:"channel"`
		Container struct {
			Type      string `json:"type"` // "view" for a click in the Home tab
			MessageTS string `json:"message_ts"`
			ChannelID string `json:"channel_id"`
			ThreadTS  string `json:"thread_ts"`
		} `json:"container"`
		Message *struct {
			ThreadTS string `json:"thread_ts"`
		} `json:"message"`
		Actions []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"actions"`
	}
	wireCommand struct {
		TeamID      string `json:"team_id"`
		ChannelID   string `json:"channel_id"`
		UserID      string `json:"user_id"`
		Command     string `json:"command"`
		Text        string `json:"text"`
		ResponseURL string `json:"response_url"`
		TriggerID   string `json:"trigger_id"`
	}
)

// payload is one delivery of the platform, as socket mode and the HTTP
// ingress both receive it: a socket envelope, or the body of a request (an
// HTTP form is read into the JSON object the socket would carry).
type payload struct {
	kind  string          // socketmode.RequestTypeEventsAPI, RequestTypeInteractive, RequestTypeSlashCommands
	body  json.RawMessage // the JSON payload
	id    string          // names a click or command without a trigger id: the envelope id, a digest of the request
	retry int             // the platform's retry attempt
	at    time.Time       // when it was received
}

// convert turns a payload into a pipeline event. A nil event with a nil
// error is a payload the pipeline has no use for; what then names its type,
// for the logs.
func convert(p payload) (ev *pipeline.Event, what string, err error) {
	switch p.kind {
	case socketmode.RequestTypeEventsAPI:
		ev, what, err = convertEventsAPI(p.body)
	case socketmode.RequestTypeInteractive:
		ev, what, err = convertInteraction(p.body, p.id)
	case socketmode.RequestTypeSlashCommands:
		ev, what, err = convertCommand(p.body, p.id)
	default:
		return nil, p.kind, nil
	}
	if ev != nil {
		ev.Retry = p.retry
		ev.Received = p.at
	}
	return ev, what, err
}

// convertEventsAPI converts app_mention and message events, the stop
// button of an agent session and the opening of the app's DM; other event
// types are ignored. Message subtypes (edits, deletions, bots' posts) are
// delivered with Subtype set: the drop stage decides.
func convertEventsAPI(payload json.RawMessage) (*pipeline.Event, string, error) {
	var outer wireEventsAPI
	if err := json.Unmarshal(payload, &outer); err != nil {
		return nil, "", fmt.Errorf("decode events_api payload: %w", err)
	}
	if outer.Type != "event_callback" {
		return nil, outer.Type, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(outer.Event, &head); err != nil {
		return nil, "", fmt.Errorf("decode event: %w", err)
	}
	switch head.Type {
	case "app_mention", "message":
	case "agent_session_stopped":
		ev, err := convertStop(outer)
		return ev, head.Type, err
	case "app_home_opened":
		ev, err := convertHomeOpened(outer)
		return ev, head.Type, err
	default:
		return nil, head.Type, nil
	}
	var m wireMessage
	if err := json.Unmarshal(outer.Event, &m); err != nil {
		return nil, head.Type, fmt.Errorf("decode %s event: %w", head.Type, err)
	}
	ev := &pipeline.Event{
		ID: outer.EventID, Kind: pipeline.KindMessage, Type: m.Type, Subtype: m.Subtype,
		TeamID: outer.TeamID, ChannelID: m.Channel, ChannelType: m.ChannelType,
		UserID: m.User, BotID: m.BotID, TS: m.TS, ThreadTS: m.ThreadTS, ParentUserID: m.ParentUser, Text: m.Text,
		Files: convertFiles(m.Files),
	}
	if ev.TeamID == "" {
		ev.TeamID = m.Team
	}
	if ev.ChannelType == "" {
		ev.ChannelType = gateway.ChannelType(m.Channel)
	}
	ev.ActionToken = m.ActionToken
	if ev.ActionToken == "" && m.AssistantThread != nil {
		ev.ActionToken = m.AssistantThread.ActionToken
	}
	if m.Subtype == "message_changed" && m.Message != nil {
		// The person and words are those of the edited message.
		e := m.Message
		ev.UserID, ev.BotID, ev.Text, ev.ThreadTS, ev.Files = e.User, e.BotID, e.Text, e.ThreadTS, convertFiles(e.Files)
		ev.ParentUserID = e.ParentUser
		if e.TS != "" {
			ev.TS = e.TS
		}
	}
	return ev, head.Type, nil
}

// convertStop converts a click on the stop button of a thread's agent
// session (docs.slack.dev, "agent_session_stopped": channel, thread_ts,
// user, streaming_message_ts, event_ts). Who clicked is judged down the
// chain, as a typed /abort is.
func convertStop(outer wireEventsAPI) (*pipeline.Event, error) {
	var e struct {
		Channel  string   `json:"channel"`
		ThreadTS string   `json:"thread_ts"`
		User     string   `json:"user"`
		Streams  []string `json:"streaming_message_ts"`
		EventTS  string   `json:"event_ts"`
	}
	if err := json.Unmarshal(outer.Event, &e); err != nil {
		return nil, fmt.Errorf("decode agent_session_stopped event: %w", err)
	}
	return &pipeline.Event{
		ID: outer.EventID, Kind: pipeline.KindStop, Type: "agent_session_stopped", TeamID: outer.TeamID,
		ChannelID: e.Channel, ChannelType: gateway.ChannelType(e.Channel), UserID: e.User,
		TS: e.EventTS, ThreadTS: e.ThreadTS, Stop: &pipeline.Stop{Streams: e.Streams},
	}, nil
}

// convertHomeOpened converts a person opening the app's DM (app_home_opened
// with tab "messages") or its Home tab (tab "home": HomeTab). The event's
// channel is the DM.
func convertHomeOpened(outer wireEventsAPI) (*pipeline.Event, error) {
	var e struct {
		User    string `json:"user"`
		Channel string `json:"channel"`
		Tab     string `json:"tab"`
		EventTS string `json:"event_ts"`
	}
	if err := json.Unmarshal(outer.Event, &e); err != nil {
		return nil, fmt.Errorf("decode app_home_opened event: %w", err)
	}
	if e.Tab == "home" && e.User != "" {
		return &pipeline.Event{ID: outer.EventID, Kind: pipeline.KindHome, Type: "app_home_opened", TeamID: outer.TeamID,
			ChannelID: e.Channel, ChannelType: pipeline.ChannelIM, UserID: e.User, TS: e.EventTS, HomeTab: true}, nil
	}
	if e.Tab != "messages" || e.Channel == "" {
		return nil, nil
	}
	return &pipeline.Event{
		ID: outer.EventID, Kind: pipeline.KindHome, Type: "app_home_opened", TeamID: outer.TeamID,
		ChannelID: e.Channel, ChannelType: pipeline.ChannelIM, UserID: e.User, TS: e.EventTS,
	}, nil
}

func convertFiles(in []wireFile) []pipeline.File {
	if len(in) == 0 {
		return nil
	}
	out := make([]pipeline.File, len(in))
	for i, f := range in {
		url := f.URLPrivateDownload
		if url == "" {
			url = f.URLPrivate
		}
		out[i] = pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Size: f.Size, URL: url}
	}
	return out
}

// convertInteraction converts a click on a button (block_actions); other
// interactions are ignored. The event id is synthesised from the trigger id,
// unique per click and the same in a redelivery.
func convertInteraction(payload json.RawMessage, fallbackID string) (*pipeline.Event, string, error) {
	var p wireInteraction
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, "", fmt.Errorf("decode interactive payload: %w", err)
	}
	if p.Type != "block_actions" || len(p.Actions) == 0 {
		return nil, p.Type, nil
	}
	if p.Container.Type == "view" {
		// A click in the Home tab: no channel, no message; authorised by
		// who clicked (user.id).
		return &pipeline.Event{ID: "action:" + firstNonEmpty(p.TriggerID, fallbackID), Kind: pipeline.KindHome, Type: p.Type,
			UserID: p.User.ID, HomeTab: true, Action: &pipeline.Action{ActionID: p.Actions[0].ActionID, Value: p.Actions[0].Value}}, p.Type, nil
	}
	channel := p.Container.ChannelID
	if channel == "" && p.Channel != nil {
		channel = p.Channel.ID
	}
	thread := p.Container.ThreadTS
	if thread == "" && p.Message != nil {
		thread = p.Message.ThreadTS
	}
	ev := &pipeline.Event{
		ID: "action:" + firstNonEmpty(p.TriggerID, fallbackID), Kind: pipeline.KindAction, Type: p.Type,
		ChannelID: channel, ChannelType: gateway.ChannelType(channel), UserID: p.User.ID,
		TS: p.Container.MessageTS, ThreadTS: thread,
		Action: &pipeline.Action{ActionID: p.Actions[0].ActionID, Value: p.Actions[0].Value,
			MessageTS: p.Container.MessageTS, ResponseURL: p.ResponseURL},
	}
	if p.Team != nil {
		ev.TeamID = p.Team.ID
	}
	return ev, p.Type, nil
}

// convertCommand converts a slash command. The platform sends no thread
// with it: it applies to the channel or DM where it was typed. fallbackID
// names it when the platform gave no trigger id.
func convertCommand(payload json.RawMessage, fallbackID string) (*pipeline.Event, string, error) {
	var c wireCommand
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, "", fmt.Errorf("decode slash command: %w", err)
	}
	if c.Command == "" {
		return nil, "slash_command", errors.New("slash command without a command")
	}
	return &pipeline.Event{
		ID: "command:" + firstNonEmpty(c.TriggerID, fallbackID), Kind: pipeline.KindCommand, Type: "slash_command",
		TeamID: c.TeamID, ChannelID: c.ChannelID, ChannelType: gateway.ChannelType(c.ChannelID), UserID: c.UserID,
		Text:    strings.TrimSpace(c.Command + " " + c.Text),
		Command: &pipeline.Command{Name: c.Command, Args: strings.TrimSpace(c.Text), ResponseURL: c.ResponseURL, TriggerID: c.TriggerID},
	}, "slash_command", nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
