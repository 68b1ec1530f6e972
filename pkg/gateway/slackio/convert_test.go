package slackio

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/internal/fake"
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
