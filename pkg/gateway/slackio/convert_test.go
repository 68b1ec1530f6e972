package slackio

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A payload converts to the same event whether socket mode or the HTTP
// ingress received it: one conversion serves both.
func TestConvertSameOverSocketAndHTTP(t *testing.T) {
	at := time.Unix(1700000000, 0)
	form := func(fields map[string]string) []byte {
		v := url.Values{}
		for k, s := range fields {
			v.Set(k, s)
		}
		return []byte(v.Encode())
	}
	command := fake.SlashCommand{Command: "/mode", Text: " plan ", User: "U1", Channel: "C1", TriggerID: "333.444.def"}.Payload()
	var commandFields map[string]string
	if err := json.Unmarshal(command, &commandFields); err != nil {
		t.Fatal(err)
	}
	message := fake.Message{EventID: "Ev1", User: "U1", Channel: "D1", TS: "1.1", Text: "hello"}.Payload()
	click := fake.BlockActions{User: "U1", Channel: "C1", MessageTS: "1.2", ThreadTS: "1.1", ActionID: "approve",
		Value: "req-1", TriggerID: "111.222.abc"}.Payload()
	for _, tt := range []struct {
		name, kind string
		socket     json.RawMessage
		read       route
		body       []byte
	}{
		{"message", socketmode.RequestTypeEventsAPI, message, events, message},
		{"click", socketmode.RequestTypeInteractive, click, interactive, form(map[string]string{"payload": string(click)})},
		{"slash command", socketmode.RequestTypeSlashCommands, command, commands, form(commandFields)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bySocket, _, err := convert(payload{kind: tt.kind, body: tt.socket, id: "env-1", retry: 1, at: at})
			if err != nil || bySocket == nil {
				t.Fatalf("socket: %+v, %v", bySocket, err)
			}
			p, reply, err := tt.read(tt.body)
			if err != nil || reply != nil {
				t.Fatalf("http read: %v, reply %v", err, reply)
			}
			p.retry, p.at = 1, at
			byHTTP, _, err := convert(p)
			if err != nil {
				t.Fatalf("http: %v", err)
			}
			if !reflect.DeepEqual(bySocket, byHTTP) {
				t.Fatalf("socket: %+v\nhttp:   %+v", bySocket, byHTTP)
			}
		})
	}
}

// The agent surface's events: the stop button of a session and the DM
// opened; the Home tab is not the DM and is ignored.
func TestConvertAgentEvents(t *testing.T) {
	for _, tt := range []struct {
		name string
		body json.RawMessage
		want *pipeline.Event
		what string
	}{
		{"stop", fake.AgentSessionStopped{EventID: "Ev1", User: "U1", Channel: "C1", ThreadTS: "1.1", Streams: []string{"1.3"},
			EventTS: "1.4"}.Payload(),
			&pipeline.Event{ID: "Ev1", Kind: pipeline.KindStop, Type: "agent_session_stopped", TeamID: fake.DefaultTeamID,
				ChannelID: "C1", ChannelType: pipeline.ChannelPublic, UserID: "U1", TS: "1.4", ThreadTS: "1.1",
				Stop: &pipeline.Stop{Streams: []string{"1.3"}}}, "agent_session_stopped"},
		{"stop without streams", fake.AgentSessionStopped{EventID: "Ev2", User: "U1", Channel: "D1", ThreadTS: "1.1", EventTS: "1.4"}.Payload(),
			&pipeline.Event{ID: "Ev2", Kind: pipeline.KindStop, Type: "agent_session_stopped", TeamID: fake.DefaultTeamID,
				ChannelID: "D1", ChannelType: pipeline.ChannelIM, UserID: "U1", TS: "1.4", ThreadTS: "1.1",
				Stop: &pipeline.Stop{Streams: []string{}}}, "agent_session_stopped"},
		{"DM opened", fake.AppHomeOpened{EventID: "Ev3", User: "U1", Channel: "D1", EventTS: "1.5"}.Payload(),
			&pipeline.Event{ID: "Ev3", Kind: pipeline.KindHome, Type: "app_home_opened", TeamID: fake.DefaultTeamID,
				ChannelID: "D1", ChannelType: pipeline.ChannelIM, UserID: "U1", TS: "1.5"}, "app_home_opened"},
		{"Home tab opened", fake.AppHomeOpened{EventID: "Ev4", User: "U1", Channel: "D1", Tab: "home", EventTS: "1.6"}.Payload(),
			&pipeline.Event{ID: "Ev4", Kind: pipeline.KindHome, Type: "app_home_opened", TeamID: fake.DefaultTeamID,
				ChannelID: "D1", ChannelType: pipeline.ChannelIM, UserID: "U1", TS: "1.6", HomeTab: true}, "app_home_opened"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, what, err := convert(payload{kind: socketmode.RequestTypeEventsAPI, body: tt.body})
			if err != nil || what != tt.what {
				t.Fatalf("what %q, err %v", what, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// A click in the Home tab (container type view) has no channel or
// message: it is the tab's, authorised by its user.
func TestConvertHomeClick(t *testing.T) {
	got, what, err := convertInteraction(fake.HomeClick{User: "U1", ActionID: "home_forget_memory", Value: "mabc", TriggerID: "T9"}.Payload(), "x")
	if err != nil || what != "block_actions" {
		t.Fatalf("what %q, err %v", what, err)
	}
	want := &pipeline.Event{ID: "action:T9", Kind: pipeline.KindHome, Type: "block_actions", UserID: "U1", HomeTab: true,
		Action: &pipeline.Action{ActionID: "home_forget_memory", Value: "mabc"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// A message's action token (top level, or nested in assistant_thread in
// older DM payloads) reaches the event; it is never serialised with it.
func TestConvertActionToken(t *testing.T) {
	for name, body := range map[string]string{
		"top level":        `{"type":"event_callback","team_id":"T1","event_id":"Ev9","event":{"type":"message","channel":"D1","user":"U1","ts":"1.1","text":"hi","action_token":"act-1"}}`,
		"assistant thread": `{"type":"event_callback","team_id":"T1","event_id":"Ev9","event":{"type":"message","channel":"D1","user":"U1","ts":"1.1","text":"hi","assistant_thread":{"action_token":"act-1"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			ev, _, err := convert(payload{kind: socketmode.RequestTypeEventsAPI, body: json.RawMessage(body)})
			if err != nil || ev == nil || ev.ActionToken != "act-1" {
				t.Fatalf("event %+v, err %v", ev, err)
			}
			if b, _ := json.Marshal(ev); strings.Contains(string(b), "act-1") {
				t.Fatalf("the action token is serialised with the event: %s", b)
			}
		})
	}
}
