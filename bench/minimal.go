package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/internal/fake"
)

// minimalBot is the yardstick: the least a bot can do with an event — ack
// it, make the same model call as the runtime's first (its system prompt,
// tools and streaming, with the event's text as the only message), read
// the answer to its end, post in the thread — on the same platform library
// and fakes. Its events are sent between the service's, one for one, so
// that both are measured under the same load on the machine.
type minimalBot struct {
	sl     *fake.Slack
	model  *httptest.Server
	cancel context.CancelFunc
}

// newMinimalBot starts the bot; call is the runtime's recorded first model
// call.
func newMinimalBot(call []byte) (*minimalBot, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(call, &req); err != nil {
		return nil, fmt.Errorf("the recorded model call: %w", err)
	}
	b := &minimalBot{sl: &fake.Slack{}, model: httptest.NewServer(&fake.Anthropic{Respond: instant, Key: benchKey})}
	api := slack.New(fake.DefaultBotToken, slack.OptionAppLevelToken(fake.DefaultAppToken), slack.OptionAPIURL(b.sl.URL()))
	sock := socketmode.New(api)
	web := slack.New(fake.DefaultBotToken, slack.OptionAPIURL(b.sl.URL()))
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() { _ = sock.RunContext(ctx) }()
	go func() {
		for evt := range sock.Events {
			if evt.Type != socketmode.EventTypeEventsAPI || evt.Request == nil {
				continue
			}
			sock.Ack(*evt.Request)
			ev, ok := evt.Data.(slackevents.EventsAPIEvent)
			if !ok {
				continue
			}
			msg, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
			if !ok {
				continue
			}
			go answer(ctx, web, b.model.URL, req, msg)
		}
	}()
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := b.sl.WaitConnections(wait, 1); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// one sends event i and returns the time to its reply.
func (b *minimalBot) one(i int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text := fmt.Sprintf("minimal %d", i)
	sent := time.Now()
	b.sl.SendEvent(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: fmt.Sprintf("%d.%06d", 5000+i, i), Text: text}.Payload())
	post, err := b.sl.WaitForPost(ctx, func(p fake.Post) bool { return p.Text == "ack "+text })
	if err != nil {
		return 0, err
	}
	return post.At.Sub(sent), nil
}

func (b *minimalBot) stop() {
	b.cancel()
	b.sl.Close()
	b.model.Close()
}

func answer(ctx context.Context, api *slack.Client, modelURL string, req map[string]json.RawMessage, msg *slackevents.MessageEvent) {
	body := make(map[string]json.RawMessage, len(req))
	for k, v := range req {
		body[k] = v
	}
	body["messages"], _ = json.Marshal([]map[string]string{{"role": "user", "content": msg.Text}})
	b, _ := json.Marshal(body)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, modelURL+"/v1/messages", bytes.NewReader(b))
	if err != nil {
		return
	}
	r.Header.Set("x-api-key", benchKey)
	r.Header.Set("anthropic-version", "2023-06-01")
	r.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, _, _ = api.PostMessageContext(ctx, msg.Channel, slack.MsgOptionText("ack "+msg.Text, false), slack.MsgOptionTS(msg.TimeStamp))
}
